"""`backupbench agent`: serve this host's monitor samples and run engines for a controller.

protocol.py (pure): the requests and answers. startup.py: the checks before listening.
tls.py: the agent's TLS and a controller's trust. reception.py: one thread reading every
connection whole; http_head.py (pure): a request's head, read by h11, and the checks before its
body. server.py: the token, bounds, worker threads. jobs.py: the one job slot. runs.py: what a
job runs (small-file engine, S3 load generator). feed.py: the 1 s samples. client.py: the
controller's side.
"""
