"""The Streamlit dashboard (``toolwatch app``): one module per page, reading only through the
store's DuckDB views (``queries.py``); ``main.py`` is the script Streamlit runs."""
