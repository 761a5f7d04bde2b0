"""Caption text that two or more papers use: spaCy and BLIP's normalisation with ARO's perturbations
(``caption_text``), CREPE-style rule-based hard negatives (``crepe_style``) and readers for released caption files
(``released_text``).
"""
