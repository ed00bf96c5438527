//! Pure reconstruction of launch configurations, timelines and ranked differences.
