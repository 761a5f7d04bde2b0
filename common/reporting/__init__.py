"""What a researcher reads: the papers' published numbers (``published``), a paper's report (``report``), numbers
named by reference (``results_ref``), the claims scorecard (``scorecard``), key figures redrawn (``key_figure``), and
the one figure and table renderers (``figures``, ``markdown_table``).
"""
