"""The per-request mode: the same devices as the fluid mode, one SimPy event per request (issue 20).

`iowatt run --mode per-request` runs fio, gds_read and the GNN feature
aggregation request by request: each request passes the volume's layout
(volume.py) to a drive, an SSD's flash units and write buffer (ssd.py,
units.py) or a hard disk's actuator (hdd.py), with service times drawn from a
seeded distribution whose mean is the fluid model's law (latency.py).  It
reports fio's latency percentiles and histogram (histogram.py, fiojson.py),
energy per request (energy.py), and referees the fluid model
(tests/test_per_request_referee.py); run.simulate is the entry and
docs/per-request.md the overview.  networks.py is the flow engine's own
referee on abstract networks.
"""
