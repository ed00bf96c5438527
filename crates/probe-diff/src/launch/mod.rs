//! Launch reconstruction: from any launch text to a `LaunchConfig`.
