"""``omnistudio mos``: a MOS 2.8.5 device an NRCS connects to (profiles 0, 1, 2 and 4): running orders in,
each story's audio out as a delivered file and a MOS object. See docs/mos.md."""
