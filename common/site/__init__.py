"""``python -m common site``: the committed results as a static HTML site that opens offline (``build``).

Why a site: ``results/`` spreads each paper's tables, figures and audit over many folders and file kinds; the site
shows them side by side, one page per paper, with the audit filterable by table and verdict, plus the cross-paper
comparison, the correlation tables and the report cards. Pages load nothing from the network: the stylesheet, the
filter script and every image are copied into the site's folder.
"""
