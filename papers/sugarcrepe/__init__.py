"""SugarCrepe — *Fixing Hackable Benchmarks for Vision-Language Compositionality* (Hsieh et al., NeurIPS 2023 D&B). See README.md beside this file."""
