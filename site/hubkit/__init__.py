"""Shared presentation helpers of the hub: cached reads, sidebar controls bound to share links, charts.

Imported as `hubkit` because `site/` is on sys.path when the hub runs (`streamlit run site/app.py`
puts the script's folder there; `app.py` does it too, for Streamlit's AppTest). Nothing here writes.
"""
