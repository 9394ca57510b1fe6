"""Faults: a member of a redundant layout failed on purpose, the array measured healthy,
degraded, rebuilding and rebuilt (issue 13). spec.py holds the recipe key (`fault = {...}`),
rules.py every rule a fault must pass (the layout declares its facts, the rules decide),
plan.py the commands each kind runs (FaultPlan), figures.py the rebuild's figures from its
samples. The array's own state is read by monitor/rebuild*.py; runner/faulted.py drives the
states."""
