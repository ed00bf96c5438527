//! Benchmark results found on the host, attributed to the run they measured: the run of a
//! server that was up when the result was written (its `[start, end)` holds the result's
//! date). A result with no date, or whose date no run holds, or that two runs of different
//! servers could both have measured (and nothing tells them apart), stays unattributed, with
//! the reason.

use probe_launch::catalog::catalog;
use probe_model::{
    BenchmarkDateSource, BenchmarkResult, BenchmarkTool, Confidence, Engine, Run, Snapshot,
    TimeBounds, Timeline, TimelineEvent, TimelineEventKind, UnixTime,
};

/// Which run one benchmark result measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribution {
    /// Index into the snapshot's `benchmarks`.
    pub benchmark: usize,
    /// Index into the analysis' `runs`.
    pub run: Option<usize>,
    /// One line: how the run was chosen, or why none was.
    pub reason: String,
}

/// Attributes each result to the run that was up at its date.
///
/// ```
/// use probe_diff::attribute_benchmarks as attribute;
/// use probe_model::{BenchmarkResult, Run, RunBound};
///
/// let at = |t: i64| RunBound { at: Some(t), ..RunBound::default() };
/// let runs = vec![
///     Run { launch: "log:/root/a.log".into(), start: at(100), end: Some(at(200)), ..Run::default() },
///     Run { launch: "pid:7".into(), start: at(200), running: true, ..Run::default() },
/// ];
/// let results = vec![BenchmarkResult { date: Some(150), ..BenchmarkResult::default() }];
/// assert_eq!(attribute(&results, &runs)[0].run, Some(0));
/// ```
pub fn attribute(results: &[BenchmarkResult], runs: &[Run]) -> Vec<Attribution> {
    results
        .iter()
        .enumerate()
        .map(|(i, r)| attribute_one(i, r, runs))
        .collect()
}

fn attribute_one(benchmark: usize, r: &BenchmarkResult, runs: &[Run]) -> Attribution {
    let none = |reason: String| Attribution {
        benchmark,
        run: None,
        reason,
    };
    let Some(date) = r.date else {
        return none("the result has no date (an earlier record of an appended file)".into());
    };
    let up: Vec<usize> = runs
        .iter()
        .enumerate()
        .filter(|(_, run)| holds(run, date))
        .map(|(i, _)| i)
        .collect();
    let chosen = match up.as_slice() {
        [] => return none("no run of a server was up at its date".into()),
        [one] => *one,
        many => {
            let fitting: Vec<usize> = many
                .iter()
                .copied()
                .filter(|i| runs.get(*i).is_some_and(|run| fits(r, run)))
                .collect();
            match fitting.as_slice() {
                [one] => *one,
                _ => {
                    return none(format!(
                        "{} runs were up at its date and nothing tells them apart",
                        many.len()
                    ));
                }
            }
        }
    };
    let Some(run) = runs.get(chosen) else {
        return none("no run of a server was up at its date".into());
    };
    Attribution {
        benchmark,
        run: Some(chosen),
        reason: format!("{} was up at its date", run.launch),
    }
}

/// One timeline event per result: at its date, or before its file's mtime when only that
/// bounds it (an earlier record of an appended file).
pub(crate) fn events(snapshot: &Snapshot) -> Vec<TimelineEvent> {
    snapshot
        .benchmarks
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let (time, confidence) = match (r.date, r.date_source) {
                (Some(t), BenchmarkDateSource::Content | BenchmarkDateSource::FileName) => (
                    TimeBounds {
                        at: Some(t),
                        ..TimeBounds::default()
                    },
                    Confidence::Exact,
                ),
                (Some(t), _) => (
                    TimeBounds {
                        at: Some(t),
                        ..TimeBounds::default()
                    },
                    Confidence::Bounded,
                ),
                (None, _) => (
                    TimeBounds {
                        not_after: Some(r.file_mtime?),
                        ..TimeBounds::default()
                    },
                    Confidence::Bounded,
                ),
            };
            Some(TimelineEvent {
                kind: TimelineEventKind::Benchmark,
                time,
                confidence,
                summary: summary(r),
                repeats: 1,
                benchmark: Some(i),
                ..TimelineEvent::default()
            })
        })
        .collect()
}

/// Marks each benchmark event of `timeline` with the run it measured, and gives the
/// attributions back (the analysis keeps them).
pub(crate) fn annotate(
    timeline: &mut Timeline,
    snapshot: &Snapshot,
    runs: &[Run],
) -> Vec<Attribution> {
    let attributions = attribute(&snapshot.benchmarks, runs);
    for e in &mut timeline.events {
        let Some(a) = e.benchmark.and_then(|b| attributions.get(b)) else {
            continue;
        };
        if let Some(run) = a.run.and_then(|i| runs.get(i)) {
            e.measured_run = Some(run.launch.clone());
            e.summary = format!("{} (measured {})", e.summary, run.launch);
        }
    }
    attributions
}

/// One line: the tool, the measured speed and the workload that produced it.
pub fn summary(r: &BenchmarkResult) -> String {
    let tool = match r.tool {
        BenchmarkTool::GenaiPerf => "genai-perf",
        BenchmarkTool::Guidellm => "guidellm",
        // An engine's own tool: its name is in the engine's definition (`[bench]`).
        own => Engine::ALL
            .into_iter()
            .find_map(|e| catalog(e, None).bench.as_ref().filter(|b| b.tool == own))
            .map_or("an engine's benchmark tool", |b| b.name.as_str()),
    };
    let mut parts: Vec<String> = Vec::new();
    let speed = r.measured.output_throughput.map_or_else(
        || "no throughput".to_string(),
        |t| format!("{t:.1} output tok/s"),
    );
    let load = match (
        r.workload.max_concurrency,
        r.workload.request_rate,
        r.workload.request_rate_inf,
    ) {
        (Some(c), _, _) => format!(" at concurrency {c}"),
        (None, Some(q), _) => format!(" at {q} req/s"),
        (None, None, true) => " with all requests at once".to_string(),
        _ => String::new(),
    };
    parts.push(format!("{speed}{load}"));
    if let (Some(i), Some(o)) = (r.workload.input_len, r.workload.output_len) {
        parts.push(format!("{i:.0} in / {o:.0} out tokens"));
    }
    if let Some(t) = r.measured.ttft_ms.p50.or(r.measured.ttft_ms.mean) {
        parts.push(format!("TTFT p50 {t:.0} ms"));
    }
    if let Some(a) = r.measured.accept_length {
        parts.push(format!("accept length {a:.2}"));
    }
    format!("benchmark ({tool}): {} ({})", parts.join(", "), r.file)
}

/// Whether a run's `[start, end)` holds `t` (a running run has no end; an end not known
/// bounds nothing).
fn holds(run: &Run, t: UnixTime) -> bool {
    let started = run.start.at.is_some_and(|s| s <= t);
    let ended = run.end.as_ref().and_then(|e| e.at).is_some_and(|e| t >= e);
    started && !ended && (run.running || run.end.as_ref().is_some_and(|e| e.at.is_some()))
}

/// Whether the result could have measured this run: the engine its `backend` names (by the
/// engines' definitions, `[bench]`; a backend no engine claims fits any) and the model it names.
fn fits(r: &BenchmarkResult, run: &Run) -> bool {
    let named = r.backend.as_deref().and_then(|b| {
        Engine::ALL.into_iter().find(|&e| {
            catalog(e, None)
                .bench
                .as_ref()
                .is_some_and(|x| x.names_server(r.tool, b))
        })
    });
    let engine_fits = named.is_none_or(|e| run.engine == e);
    let model_fits = match (r.model.as_deref(), run.model.as_ref()) {
        (Some(m), Some(summary)) => {
            let tail = |s: &str| {
                s.trim_end_matches('/')
                    .rsplit('/')
                    .next()
                    .unwrap_or("")
                    .to_string()
            };
            tail(m) == tail(&summary.model)
        }
        _ => true,
    };
    engine_fits && model_fits
}

#[cfg(test)]
mod tests {
    use probe_model::{ModelSummary, RunBound};

    use super::*;

    #[test]
    fn summary_names_the_tool_speed_and_workload() {
        let mut r = BenchmarkResult {
            tool: BenchmarkTool::VllmBenchServe,
            file: "/r/x.json".into(),
            ..Default::default()
        };
        r.measured.output_throughput = Some(632.14);
        r.workload.max_concurrency = Some(8.0);
        r.workload.input_len = Some(1024.0);
        r.workload.output_len = Some(128.0);
        r.measured.ttft_ms.p50 = Some(110.0);
        assert_eq!(
            summary(&r),
            "benchmark (vllm bench serve): 632.1 output tok/s at concurrency 8, 1024 in / 128 out tokens, TTFT p50 110 ms (/r/x.json)"
        );
    }

    fn at(t: i64) -> RunBound {
        RunBound {
            at: Some(t),
            ..RunBound::default()
        }
    }

    fn run(launch: &str, engine: Engine, start: i64, end: Option<i64>, model: &str) -> Run {
        Run {
            launch: launch.into(),
            engine,
            running: end.is_none(),
            start: at(start),
            end: end.map(at),
            model: Some(ModelSummary {
                model: model.into(),
                ..ModelSummary::default()
            }),
            ..Run::default()
        }
    }

    #[test]
    fn each_result_goes_to_the_run_up_at_its_date() {
        let runs = vec![
            run(
                "log:/root/sglang.log",
                Engine::Sglang,
                100,
                Some(200),
                "/m/Qwen3-8B",
            ),
            run("pid:7", Engine::Sglang, 200, None, "/m/Qwen3-8B"),
            run(
                "unit:vllm.service",
                Engine::Vllm,
                150,
                None,
                "Qwen/Qwen3-32B",
            ),
        ];
        let r = |date: Option<i64>, backend: Option<&str>, model: Option<&str>| BenchmarkResult {
            date,
            tool: BenchmarkTool::SglangBenchServing,
            backend: backend.map(String::from),
            model: model.map(String::from),
            ..BenchmarkResult::default()
        };
        // (result, expected run, reason contains)
        let cases: Vec<(BenchmarkResult, Option<usize>, &str)> = vec![
            (
                r(Some(120), None, None),
                Some(0),
                "log:/root/sglang.log was up",
            ),
            // The end is exclusive: at 200 the new run holds it (and vLLM's).
            (r(Some(200), Some("sglang"), None), Some(1), "pid:7"),
            (
                r(Some(160), Some("vllm"), None),
                Some(2),
                "unit:vllm.service",
            ),
            (
                r(Some(160), None, Some("/models/Qwen3-8B")),
                Some(0),
                "log:",
            ),
            (r(Some(160), None, None), None, "2 runs were up"),
            (r(Some(50), None, None), None, "no run"),
            (r(None, None, None), None, "no date"),
        ];
        let results: Vec<BenchmarkResult> = cases.iter().map(|c| c.0.clone()).collect();
        let got = attribute(&results, &runs);
        for (i, (_, run, reason)) in cases.iter().enumerate() {
            assert_eq!(got[i].benchmark, i);
            assert_eq!(got[i].run, *run, "case {i}: {}", got[i].reason);
            assert!(
                got[i].reason.contains(reason),
                "case {i}: {}",
                got[i].reason
            );
        }
    }

    #[test]
    fn a_run_whose_end_is_not_known_holds_nothing_after_its_start() {
        let mut r = run("history", Engine::Vllm, 100, Some(0), "m");
        r.end = Some(RunBound::default());
        let got = attribute(
            &[BenchmarkResult {
                date: Some(150),
                ..BenchmarkResult::default()
            }],
            &[r],
        );
        assert_eq!(got[0].run, None);
    }
}
