"""The recipe: devices x layouts x workloads, read from TOML. model.py composes the specs the
layouts and workloads define (each key is defined once, where its layout or workload lives),
hosts.py the [hosts] table (workloads on other machines), keys.py the keys as written (key
paths, did-you-mean), reader.py the bounded, strict file reader."""
