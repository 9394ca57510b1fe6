"""Workload engines behind one interface (see base.py); the runner never sees their insides."""
