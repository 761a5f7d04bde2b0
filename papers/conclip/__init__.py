"""CoN-CLIP — *Learn "No" to Say "Yes" Better* (Singh et al., ECCV 2024). See README.md beside this file."""
