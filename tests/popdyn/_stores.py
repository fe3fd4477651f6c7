"""Comparing stored runs in the sweep/store tests: records (without timing info) and arrays equal."""
import numpy as np


def _strip(rec):
    rec = dict(rec)
    rec.pop("info")
    return rec


def same_run(s1, s2, key):
    """Run ``key`` is stored identically in stores ``s1`` and ``s2`` (bit-for-bit arrays)."""
    assert _strip(s1.record(key)) == _strip(s2.record(key))
    a1, a2 = s1.arrays(key), s2.arrays(key)
    assert sorted(a1) == sorted(a2)
    for k in a1:
        assert np.array_equal(a1[k], a2[k]), k
