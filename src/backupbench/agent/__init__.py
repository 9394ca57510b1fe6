"""`backupbench agent`: serve this host's monitor samples and run engines for a controller.

protocol.py (pure): the requests and answers. server.py: the HTTP server (token, bounds,
one job at a time). jobs.py: the job slot. runs.py: what a job runs (small-file engine,
S3 load generator). feed.py: the 1 s samples. startup.py: the checks before listening.
client.py: the controller's side.
"""
