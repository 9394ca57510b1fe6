"""Drawing stored results (analysis/ and sizing/ work them out): the terminal tables of a run
(terminal.py) and of devices, plans, sizing answers, repository plans, hosts and faults; the
live monitor view (live.py); the self-contained HTML pages (html_page.py the document, html.py a
run's sections, compare_html.py several runs) and their charts (charts.py, fault_chart.py).
fault_analysis.py sets a fault run against sizing's models: here, since sizing/ reads analysis/."""
