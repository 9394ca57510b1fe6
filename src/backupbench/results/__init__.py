"""Results: the run model (model.py), the SQLite store (store.py), where results live
(location.py), a run's folder read back (runfiles.py), and what other programs read: the
versioned --json document (document.py) with the JSON Schemas generated from its models
(schema/), CSV (csvout.py) and Prometheus (prometheus.py) exports."""
