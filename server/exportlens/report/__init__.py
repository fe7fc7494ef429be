"""The HTML report: one self-contained page for a check of many models, grouped by root cause.

`jsonreport` builds and reads the JSON report (schema 2) the page is rendered from, `sources` keeps
the lines it shows, `causes` groups findings by root cause, `diff` turns fixes into diff rows,
`page` lays the page out through `markup` (the one place text becomes HTML), with `assets` (its
inline stylesheet and script). `pytest_html` gives `pytest --exportlens --exportlens-html`.
No torch here, as everywhere outside the worker.
"""
