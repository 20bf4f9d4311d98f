//! A tiny reader of this process's `/proc/self` figures for the standard
//! Prometheus `process_*` metrics: CPU time, resident and virtual memory,
//! threads, open and maximum file descriptors, start time. Linux only;
//! elsewhere (or when `/proc` is not mounted) every figure is absent and
//! the metrics are simply not exported.

/// `USER_HZ`: the unit of the CPU times in `/proc/<pid>/stat`. The kernel
/// reports those times in this fixed unit (100 on every architecture Linux
/// exports `/proc` for), whatever its internal tick rate.
const USER_HZ: f64 = 100.0;

/// One reading of the process's figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcessStats {
    /// User + system CPU seconds.
    pub cpu_seconds: Option<f64>,
    /// Resident set size, bytes (`VmRSS`).
    pub resident_bytes: Option<u64>,
    /// Virtual memory size, bytes (`VmSize`).
    pub virtual_bytes: Option<u64>,
    /// Threads.
    pub threads: Option<u64>,
    /// Open file descriptors (entries of `/proc/self/fd`).
    pub open_fds: Option<u64>,
    /// The soft limit on open files.
    pub max_fds: Option<u64>,
    /// Start time, Unix seconds.
    pub start_time_seconds: Option<f64>,
}

/// Reads `/proc/self` now.
pub fn read() -> ProcessStats {
    let stat = std::fs::read_to_string("/proc/self/stat").ok();
    let status = std::fs::read_to_string("/proc/self/status").ok();
    let limits = std::fs::read_to_string("/proc/self/limits").ok();
    let boot = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| boot_time(&s));
    let fields = stat.as_deref().map(stat_fields).unwrap_or_default();
    let field = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    // Fields after the command name, numbered as in proc(5) minus 3:
    // utime (14) → 11, stime (15) → 12, starttime (22) → 19.
    let cpu_seconds = match (field(11), field(12)) {
        (Some(u), Some(s)) => Some((u + s) as f64 / USER_HZ),
        _ => None,
    };
    let start_time_seconds = match (field(19), boot) {
        (Some(ticks), Some(boot)) => Some(boot as f64 + ticks as f64 / USER_HZ),
        _ => None,
    };
    let open_fds = std::fs::read_dir("/proc/self/fd")
        .ok()
        .map(|d| d.filter(Result::is_ok).count() as u64);
    ProcessStats {
        cpu_seconds,
        resident_bytes: status.as_deref().and_then(|s| status_kib(s, "VmRSS:")),
        virtual_bytes: status.as_deref().and_then(|s| status_kib(s, "VmSize:")),
        threads: status
            .as_deref()
            .and_then(|s| status_value(s, "Threads:"))
            .and_then(|v| v.parse().ok()),
        open_fds,
        max_fds: limits.as_deref().and_then(max_open_files),
        start_time_seconds,
    }
}

/// The whitespace-separated fields of `/proc/self/stat` after the command
/// name (which is in parentheses and may itself contain spaces).
fn stat_fields(stat: &str) -> Vec<String> {
    let after = stat.rfind(')').map_or("", |i| &stat[i + 1..]);
    after.split_whitespace().map(str::to_string).collect()
}

/// The value after `key` on its line of `/proc/self/status`.
fn status_value<'a>(status: &'a str, key: &str) -> Option<&'a str> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .map(str::trim)
}

/// A `kB` figure of `/proc/self/status`, in bytes.
fn status_kib(status: &str, key: &str) -> Option<u64> {
    let v = status_value(status, key)?;
    let kib: u64 = v.strip_suffix("kB").unwrap_or(v).trim().parse().ok()?;
    kib.checked_mul(1024)
}

/// The soft "Max open files" limit of `/proc/self/limits`.
fn max_open_files(limits: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// `btime` of `/proc/stat`: boot time, Unix seconds.
fn boot_time(stat: &str) -> Option<u64> {
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_formats() {
        let stat =
            "42 (a (b) c) S 1 42 42 0 -1 4194304 99 0 0 0 250 50 0 0 20 0 7 0 1000 3133440 352";
        let f = stat_fields(stat);
        assert_eq!(f[0], "S");
        assert_eq!(f[11], "250");
        assert_eq!(f[12], "50");
        assert_eq!(f[19], "1000");
        let status = "Name:\tdocket\nVmSize:\t  2048 kB\nVmRSS:\t  1024 kB\nThreads:\t7\n";
        assert_eq!(status_kib(status, "VmRSS:"), Some(1024 * 1024));
        assert_eq!(status_kib(status, "VmSize:"), Some(2048 * 1024));
        assert_eq!(status_value(status, "Threads:"), Some("7"));
        let limits = "Limit                     Soft Limit           Hard Limit           Units\nMax open files            1024                 4096                 files\n";
        assert_eq!(max_open_files(limits), Some(1024));
        assert_eq!(
            boot_time("cpu 1 2\nbtime 1700000000\n"),
            Some(1_700_000_000)
        );
    }

    #[test]
    fn reads_this_process_on_linux() {
        if !std::path::Path::new("/proc/self/stat").exists() {
            return;
        }
        let s = read();
        assert!(s.resident_bytes.is_some_and(|b| b > 0));
        assert!(s.open_fds.is_some_and(|n| n >= 3));
        assert!(s.cpu_seconds.is_some());
        assert!(s.threads.is_some_and(|n| n >= 1));
        assert!(s.start_time_seconds.is_some_and(|t| t > 1.0e9));
    }
}
