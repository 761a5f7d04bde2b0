"""Caption text that two or more papers use: ARO's spaCy tags and perturbations and BLIP's normalisation
(``caption_text``), CREPE-style hard negatives (``crepe_style``), released caption files (``released_text``)."""
