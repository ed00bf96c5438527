//! The steps every plan ends with: how to check that the rollback took. The engine's own
//! answer about itself (the request probe asked it, with what the good side answered), the
//! metric the verdict compared with the value expected back, and `probe diff A B` again,
//! which shows no serving-relevant difference and exits 0 once the rollback is done.

use probe_model::{
    LaunchConfig, RollbackAction, RollbackStep, ServerReading, Snapshot, SnapshotDiff, VerifyAt,
};

/// The reading of the server that runs `launch`, else the snapshot's only one of its engine.
fn reading<'a>(snapshot: &'a Snapshot, launch: &LaunchConfig) -> Option<&'a ServerReading> {
    let label = probe_launch::evidence_label(launch);
    snapshot
        .servers
        .iter()
        .find(|r| r.launch == label)
        .or_else(|| {
            let mut same = snapshot
                .servers
                .iter()
                .filter(|r| r.engine == launch.engine);
            let one = same.next()?;
            same.next().is_none().then_some(one)
        })
}

/// The engine's answer about itself: the first request it answered that is not its metrics.
fn engine_step(
    (before_snap, after_snap): (&Snapshot, &Snapshot),
    (before, after): (&LaunchConfig, &LaunchConfig),
) -> Option<RollbackStep> {
    let now = reading(after_snap, after)?;
    let request = now
        .requests
        .iter()
        .find(|r| r.status == Some(200) && r.path != "/metrics")?;
    let good = reading(before_snap, before);
    let version = good
        .and_then(|g| g.version.clone())
        .or_else(|| before.engine_version.clone());
    let mut expect = Vec::new();
    if let Some(v) = version {
        expect.push(format!("version {v}"));
    }
    if let Some(model) = good.and_then(|g| g.model.clone()) {
        expect.push(format!("model {model}"));
    }
    if expect.is_empty() {
        expect.push(String::from("an answer: the server is up again"));
    }
    Some(RollbackStep {
        action: RollbackAction::Verify {
            command: Some(format!("curl -fsS http://{}{}", now.address, request.path)),
            at: VerifyAt::Host,
            expect: format!(
                "{} (what {} answered; the server may take minutes to load)",
                expect.join(", "),
                before_snap
                    .host
                    .hostname
                    .as_deref()
                    .unwrap_or("the earlier side")
            ),
        },
        why: String::from("what the engine says it runs, once it is up"),
    })
}

/// The verify-after steps of a plan.
pub(crate) fn steps(
    snaps: (&Snapshot, &Snapshot),
    first: Option<(&LaunchConfig, &LaunchConfig)>,
    diff: &SnapshotDiff,
) -> Vec<RollbackStep> {
    let mut out: Vec<RollbackStep> = first
        .and_then(|launches| engine_step(snaps, launches))
        .into_iter()
        .collect();
    let (a, b) = (&diff.before.host, &diff.after.host);
    let symptom = diff.verdict.as_ref().and_then(|v| v.symptom.as_ref());
    if let Some((symptom, was, now)) =
        symptom.and_then(|s| Some((s, s.before.as_ref()?, s.after.as_ref()?)))
    {
        let unit = if symptom.unit.is_empty() {
            String::new()
        } else {
            format!(" {}", symptom.unit)
        };
        out.push(RollbackStep {
            action: RollbackAction::Verify {
                command: None,
                at: VerifyAt::Probe,
                expect: format!(
                    "{} back near {:.1}{unit} (its mean on {a}; {:.1}{unit} on {b} before the \
                     rollback), at the same load",
                    symptom.metric, was.mean, now.mean
                ),
            },
            why: String::from("the metric the verdict compared"),
        });
    }
    out.push(RollbackStep {
        action: RollbackAction::Verify {
            command: Some(format!(
                "probe diff {} {}",
                super::quote(a),
                super::quote(b)
            )),
            at: VerifyAt::Probe,
            expect: String::from(
                "no serving-relevant difference left, exit 0 (both collected again after the \
                 restart)",
            ),
        },
        why: String::from("the diff that found the differences, again"),
    });
    out
}
