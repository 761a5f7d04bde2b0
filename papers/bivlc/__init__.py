"""BiVLC — *Extending Vision-Language Compositionality Evaluation with Text-to-Image Retrieval* (Miranda et al., NeurIPS 2024 D&B). See README.md beside this file."""
