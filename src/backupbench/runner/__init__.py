"""Running workloads while sampling, every phase recorded, as one stored run: pipeline.py
(RunSession; `run`), phases.py (each phase's record, monitor and journal), apply.py with
faulted.py and fill.py (a recipe's layouts, a fault's states), hosts.py and agents.py (a
workload on other machines) with apply_hosts.py and host_monitor.py, cleanup.py (the sweep of
a run's journal)."""
