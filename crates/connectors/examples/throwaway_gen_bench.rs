use sleet_connectors::ysb::YsbGenerator;
use sleet_exec::RawRecords;
use sleet_plan::YsbSourceSpec;
fn main() {
    let spec = YsbSourceSpec { seed: 1, rate_per_s: 1_000_000, partitions: 1, bad_fraction: 0.01 };
    let generator = YsbGenerator::new(&spec, 0);
    let start = 1_700_000_000_000i64;
    let mut total = 0u64;
    let mut bytes = 0usize;
    let t = std::time::Instant::now();
    for round in 0..3 {
      for b in 0..100i64 {
        let mut out = RawRecords::new();
        let s = start + round * 100_000 + b * 100;
        total += generator.generate(s, s + 100, &mut out);
        bytes += out.data.len();
      }
    }
    let secs = t.elapsed().as_secs_f64();
    println!("{total} events, {:.0} events/s, {:.1} bytes/event", total as f64 / secs, bytes as f64 / total as f64);
}
