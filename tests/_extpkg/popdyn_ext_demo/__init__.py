"""A user package with its own link, its own teacher kind (``teachers``) and its own popdyn
check (``checks``)."""
