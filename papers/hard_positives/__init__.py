"""The Hard Positive Truth about Vision-Language Compositionality (Kamath et al., ECCV 2024). See README.md beside this file."""
