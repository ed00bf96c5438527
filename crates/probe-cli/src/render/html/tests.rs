//! The pages' skeleton (snapshots with the data elided) and the property that no string in a
//! report can break the page's structure.

use probe_model::{HostReport, LaunchConfig, LaunchOption, Run, RunBound, TimelineEvent};
use proptest::prelude::*;

use super::*;

/// The page with its style sheet, JSON data and probe's version elided: the skeleton a reviewer
/// reads, which a release does not change.
fn skeleton(page: &str) -> String {
    skeleton_of(page).replace(env!("CARGO_PKG_VERSION"), "VERSION")
}

fn skeleton_of(page: &str) -> String {
    let mut out = String::new();
    let mut rest = page;
    for (open, close) in [("<style>", "</style>"), ("id=\"probe-data\"", "</script>")] {
        if let (Some(start), Some(end)) = (rest.find(open), rest.find(close)) {
            let keep = start + open.len();
            let keep = if open.starts_with("id=") {
                keep + rest[keep..].find('>').map_or(0, |i| i + 1)
            } else {
                keep
            };
            out.push_str(&rest[..keep]);
            out.push_str("...");
            rest = &rest[end..];
        }
    }
    out.push_str(rest);
    out
}

/// A report with a string in every place the page shows remote text.
fn report_with(text: &str) -> HostReport {
    let mut launch = LaunchConfig {
        model: Some(text.to_string()),
        ..LaunchConfig::default()
    };
    launch.source.running = true;
    launch.source.location = text.to_string();
    launch.options.insert(
        text.to_string(),
        LaunchOption {
            value: serde_json::Value::from(text),
            written: text.to_string(),
        },
    );
    let earlier = LaunchConfig {
        model: Some("other".into()),
        ..LaunchConfig::default()
    };
    let mut report = HostReport {
        target: text.to_string(),
        snapshot_id: text.to_string(),
        collected_at: 1_795_000_000,
        running: vec![launch],
        earlier: vec![earlier],
        notices: vec![text.to_string()],
        ..HostReport::default()
    };
    report.host.hostname = Some(text.to_string());
    report.host.boot_time = Some(1_794_990_000);
    report.runs = vec![Run {
        launch: text.to_string(),
        running: true,
        start: RunBound {
            at: Some(1_794_995_000),
            evidence: text.to_string(),
            ..RunBound::default()
        },
        ..Run::default()
    }];
    report.install_events = vec![TimelineEvent {
        summary: text.to_string(),
        time: probe_model::TimeBounds {
            at: Some(1_794_994_000),
            ..Default::default()
        },
        ..TimelineEvent::default()
    }];
    report
}

/// Elements probe writes; anything else in a page came from a string that was not escaped.
const ELEMENTS: &[&str] = &[
    "!DOCTYPE",
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "section",
    "h1",
    "h2",
    "h3",
    "h4",
    "p",
    "dl",
    "dt",
    "dd",
    "div",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "ul",
    "li",
    "pre",
    "figure",
    "figcaption",
    "svg",
    "g",
    "rect",
    "line",
    "circle",
    "text",
    "span",
    "i",
    "a",
    "code",
    "footer",
    "script",
];
const VOID: &[&str] = &["!DOCTYPE", "meta", "rect", "line", "circle"];

/// Every tag is one of probe's, non-void elements are balanced, one script block (JSON) only.
fn assert_structure(page: &str) {
    let mut depth: std::collections::BTreeMap<String, i64> = Default::default();
    let mut rest = page;
    while let Some(at) = rest.find('<') {
        rest = &rest[at + 1..];
        let closing = rest.starts_with('/');
        let name: String = rest
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '!')
            .collect();
        assert!(ELEMENTS.contains(&name.as_str()), "unexpected tag <{name}");
        let end = rest.find('>').expect("tag closed");
        let self_closing = rest[..end].ends_with('/');
        if !VOID.contains(&name.as_str()) && !self_closing {
            *depth.entry(name).or_default() += if closing { -1 } else { 1 };
        }
        rest = &rest[end..];
    }
    for (name, count) in depth {
        assert_eq!(count, 0, "<{name}> unbalanced");
    }
    assert_eq!(page.matches("<script").count(), 1);
    assert!(page.contains("<script type=\"application/json\" id=\"probe-data\""));
    assert!(page.contains(page::CONTENT_SECURITY_POLICY));
}

#[test]
fn host_page_skeleton() {
    let page = host_page(&[HostReport::default()]);
    assert_structure(&page);
    insta::assert_snapshot!("host_page_skeleton", skeleton(&page));
}

#[test]
fn red_team_strings_stay_text() {
    for payload in [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "<a href=\"javascript:alert(1)\">x</a>",
        "</style><style>body{background:url(https://evil.invalid/x)}</style>",
        "gpu\u{202e}7\u{2066}",
        "</script><script>alert(2)</script>",
    ] {
        let page = host_page(&[report_with(payload)]);
        assert_structure(&page);
        assert!(!page.contains(payload), "{payload} appeared raw");
        assert!(!page.contains('\u{202e}'));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn no_string_breaks_the_page(text in "\\PC{0,40}|[<>&\"'/a-z =:;(){}\\u{202e}]{0,40}") {
        let page = host_page(&[report_with(&text)]);
        assert_structure(&page);
    }
}

/// A verdict that compares periods inside the running run (a change point, or `--baseline`):
/// the chart shades those spans, each titled with why it was chosen, not the whole runs.
#[test]
fn the_periods_a_verdict_compares_are_shaded() {
    use probe_model::{ComparedPeriod, LaunchDiff, MetricReport, MetricSummary, RunMetrics};
    let mut report = report_with("vllm");
    let summary = |mean: f64, from: i64, to: i64| MetricSummary {
        count: 100,
        mean,
        p50: mean,
        min: mean - 10.0,
        max: mean + 10.0,
        first_time: Some(from),
        last_time: Some(to),
        ..MetricSummary::default()
    };
    report.metrics_by_run = vec![RunMetrics {
        launch: "pid:120".into(),
        running: true,
        start: Some(1_794_000_000),
        end: None,
        metrics: vec![MetricReport {
            name: "gen_throughput".into(),
            unit: "tok/s".into(),
            summary: summary(70.0, 1_794_000_000, 1_795_000_000),
            ..MetricReport::default()
        }],
    }];
    let period = |label: &str, start: i64, end: Option<i64>, why: &str| ComparedPeriod {
        label: label.into(),
        start,
        end,
        run_start: Some(1_794_000_000),
        launch: "pid:120".into(),
        why: why.into(),
    };
    report.vs_period = Some(LaunchDiff {
        periods: vec![
            period(
                "before",
                1_794_000_000,
                Some(1_794_500_000),
                "named by --baseline <b>",
            ),
            period("after", 1_794_600_000, None, "change point in running_reqs"),
        ],
        ..LaunchDiff::default()
    });
    let page = host_page(&[report]);
    assert_structure(&page);
    assert_eq!(page.matches("class=\"compared\"").count(), 2, "{page}");
    assert!(page.contains("compared period: before: named by --baseline &lt;b&gt;"));
    assert!(page.contains("compared period: after: change point in running_reqs"));
}
