//! One type for every generated source, so a worker holds whichever the job's plan names
//! without knowing the kinds.

use sleet_exec::RawRecords;
use sleet_plan::SourceSpec;

use crate::numbers::NumbersGenerator;
use crate::ysb::YsbGenerator;

pub enum Generator {
    Ysb(YsbGenerator),
    Numbers(NumbersGenerator),
}

impl Generator {
    pub fn new(spec: &SourceSpec, partition: u32) -> Generator {
        match spec {
            SourceSpec::Ysb(ysb) => Generator::Ysb(YsbGenerator::new(ysb, partition)),
            SourceSpec::Numbers(numbers) => Generator::Numbers(NumbersGenerator::new(numbers, partition)),
        }
    }

    /// Appends this partition's records for `[start_ms, end_ms)`; returns how many.
    pub fn generate(&self, start_ms: i64, end_ms: i64, out: &mut RawRecords) -> u64 {
        match self {
            Generator::Ysb(generator) => generator.generate(start_ms, end_ms, out),
            Generator::Numbers(generator) => generator.generate(start_ms, end_ms, out),
        }
    }
}
