//! Map outputs waiting for their reducer. Each block is read exactly once, by the one reduce
//! task of its partition and batch, so a read removes it: memory is freed as batches drain.

use rustc_hash::FxHashMap as HashMap;
use std::sync::Mutex;

use arrow_array::RecordBatch;
use sleet_wire::{BlockId, JobId};

#[derive(Default)]
pub struct BlockStore {
    blocks: Mutex<HashMap<BlockId, RecordBatch>>,
}

impl BlockStore {
    pub fn put(&self, id: BlockId, block: RecordBatch) {
        let previous = self.blocks.lock().expect("block store lock").insert(id, block);
        assert!(previous.is_none(), "block {id:?} written twice");
    }

    pub fn take(&self, id: &BlockId) -> Option<RecordBatch> {
        self.blocks.lock().expect("block store lock").remove(id)
    }

    pub fn drop_job(&self, job: JobId) {
        self.blocks.lock().expect("block store lock").retain(|id, _| id.job != job);
    }

    pub fn len(&self) -> usize {
        self.blocks.lock().expect("block store lock").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
