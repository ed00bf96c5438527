//! The host's facts: names, OS, kernel, CPU, memory, boot.

use probe_model::{ChangeKind, Snapshot};
use serde_json::Value;

use super::collector::Collector;
use crate::impact::{Area, Subject};
use probe_launch::catalog::values_equal;

pub(super) fn compare_host(before: &Snapshot, after: &Snapshot, collector: &mut Collector) {
    let (left, right) = (&before.host, &after.host);
    let text = |value: &Option<String>| value.as_ref().map(|v| Value::from(v.trim()));
    let number = |value: Option<u64>| value.map(Value::from);
    let fields: [(&str, Option<Value>, Option<Value>); 11] = [
        ("hostname", text(&left.hostname), text(&right.hostname)),
        ("os_pretty", text(&left.os_pretty), text(&right.os_pretty)),
        (
            "os_version_id",
            text(&left.os_version_id),
            text(&right.os_version_id),
        ),
        ("kernel", text(&left.kernel), text(&right.kernel)),
        ("arch", text(&left.arch), text(&right.arch)),
        ("cpu_model", text(&left.cpu_model), text(&right.cpu_model)),
        (
            "cpu_count",
            number(left.cpu_count.map(u64::from)),
            number(right.cpu_count.map(u64::from)),
        ),
        (
            "mem_total_kib",
            number(left.mem_total_kib),
            number(right.mem_total_kib),
        ),
        ("uptime_s", number(left.uptime_s), number(right.uptime_s)),
        (
            "boot_time",
            left.boot_time.map(Value::from),
            right.boot_time.map(Value::from),
        ),
        (
            "mem_available_kib",
            number(left.mem_available_kib),
            number(right.mem_available_kib),
        ),
    ];
    for (name, before_value, after_value) in fields {
        let (Some(a), Some(b)) = (before_value, after_value) else {
            continue;
        };
        if values_equal(&a, &b, None) {
            continue;
        }
        // The total memory the kernel reports moves by a few MiB between kernels.
        if name == "mem_total_kib"
            && let (Some(x), Some(y)) = (a.as_u64(), b.as_u64())
            && x.abs_diff(y) < 512 * 1024
        {
            continue;
        }
        let subject =
            Subject::new(Area::Host, name, ChangeKind::Changed).values(Some(&a), Some(&b));
        let note = (name == "hostname").then(|| String::from("two different hosts are compared"));
        collector.push(&subject, format!("host.{name}"), note);
    }
}
