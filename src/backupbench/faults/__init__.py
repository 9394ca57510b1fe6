"""Faults: a member of a redundant layout failed on purpose, the array measured degraded,
rebuilding and rebuilt (issue 13). spec.py holds the recipe key, plan.py what each kind
does, progress.py how each kind's own rebuild state is read, watch.py the 1 s sampler."""
