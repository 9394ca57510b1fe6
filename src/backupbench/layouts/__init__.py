"""Layouts: each kind turns a spec into actions (exact command lists) and their undo.

Nothing here touches a disk: actions are data until the executor runs them, so `plan`
prints exactly what `apply` will do. A kind's spec also declares the facts the fault rules
read (`fault_facts()`, faults/rules.py); its planner asks faults/plan.py for the commands.
"""
