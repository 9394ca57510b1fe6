"""Workloads: what each backup job does to storage and how it is scored, one module each
(kb2014, firstwrite, blockclone, smallfiles, s3 with its s3_* modules); base.py (Workload,
PhaseHooks, Definition), registry.py (one line per workload), and what several share
(fio_workload.py, content_options.py)."""
