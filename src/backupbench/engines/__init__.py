"""How to drive each tool, knowing nothing of workloads, recipes or the store: an engine gets a
resolved job and a folder for its raw output, reports progress through the callback of base.py
and returns its figures; the workload that drives it decides the rest.

fio: fio.py (the runner), fio_job.py (job files), fio_json.py and fio_bins.py (its output and
latency histograms), fio_progress.py (its ETA lines), fio_client.py (client/server mode on N
hosts). The small-file engine: smallfiles.py with its job, workers and results modules. The S3
load generator: s3.py (drives the native backupbench-s3load), s3_credentials.py, s3_errors.py,
s3_records.py. Block cloning: clone.py. What the bytes written are: content.py."""
