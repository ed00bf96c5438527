use super::*;

/// A misspelt name in the schedule would compile and silently change what waits for what.
#[test]
fn the_schedule_names_what_probes_toml_defines() {
    assert_eq!(
        unknown_schedule_names(ROUND2_NEEDS, ROUND2_WAVES),
        Vec::<String>::new()
    );
    let typo = [Wave {
        groups: &["gpu_prcs"],
        wants: &["gpu_query", "histroy"],
        wait_if: |_| true,
    }];
    assert_eq!(
        unknown_schedule_names(&["host", "unit"], &typo),
        ["section unit", "section histroy", "group gpu_prcs"]
    );
}
