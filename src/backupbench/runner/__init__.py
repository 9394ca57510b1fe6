"""Running a workload against a target while sampling: the pipeline shared by every workload."""
