//! The lease a DynamoDB-backed indexer holds on a project while it publishes: renewed by a
//! thread at a third of its term, so a crashed holder's lease runs out on its own, and deleted
//! (conditionally: only while it is still this holder's) when the guard is dropped.

use aws_sdk_dynamodb::error::DisplayErrorContext;
use ctxgate_core::item_key::ItemKey;
use ctxgate_core::item_key::attr::{EXPIRES_MS, HOLDER, PK, SK};

use super::super::now_ms;
use super::{n, s};

/// A held lease: a thread renews it until it is dropped, then it is deleted.
pub(super) struct Lease {
    stop: Option<std::sync::mpsc::Sender<()>>,
    renewer: Option<std::thread::JoinHandle<()>>,
    dynamo: aws_sdk_dynamodb::Client,
    handle: tokio::runtime::Handle,
    table: String,
    key: ItemKey,
    token: String,
}

impl Lease {
    pub(super) fn hold(
        dynamo: aws_sdk_dynamodb::Client,
        handle: tokio::runtime::Handle,
        table: String,
        key: ItemKey,
        token: String,
        lease_ms: u64,
    ) -> Self {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let renewer = {
            let (dynamo, handle, table, key, token) = (
                dynamo.clone(),
                handle.clone(),
                table.clone(),
                key.clone(),
                token.clone(),
            );
            std::thread::spawn(move || {
                let every = std::time::Duration::from_millis((lease_ms / 3).max(100));
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(every)
                {
                    let renewed = handle.block_on(
                        dynamo
                            .update_item()
                            .table_name(&table)
                            .key(PK, s(&key.pk))
                            .key(SK, s(&key.sk))
                            .update_expression(format!("SET {EXPIRES_MS} = :e"))
                            .condition_expression(format!("{HOLDER} = :me"))
                            .expression_attribute_values(":e", n(now_ms() + lease_ms))
                            .expression_attribute_values(":me", s(&token))
                            .send(),
                    );
                    if let Err(e) = renewed {
                        tracing::warn!(
                            "could not renew the lease on {}: {}",
                            key.pk,
                            DisplayErrorContext(e)
                        );
                    }
                }
            })
        };
        Self {
            stop: Some(stop),
            renewer: Some(renewer),
            dynamo,
            handle,
            table,
            key,
            token,
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(r) = self.renewer.take() {
            let _ = r.join();
        }
        // Best effort: an unreleased lease expires on its own.
        let _ = self.handle.block_on(
            self.dynamo
                .delete_item()
                .table_name(&self.table)
                .key(PK, s(&self.key.pk))
                .key(SK, s(&self.key.sk))
                .condition_expression(format!("{HOLDER} = :me"))
                .expression_attribute_values(":me", s(&self.token))
                .send(),
        );
    }
}
