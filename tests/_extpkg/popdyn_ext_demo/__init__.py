"""A user package with its own link and its own popdyn check (see ``checks``)."""
