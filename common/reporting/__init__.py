"""What a researcher reads: the papers' published numbers, a paper's report, the claims scorecard, key figures."""
