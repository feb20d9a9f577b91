//! `ctxgate aws init` and `ctxgate jobs`.

use ctxgate_indexer::aws::{AwsStore, S3Location};
use ctxgate_indexer::jobs;

use super::{data_dir, index_store, print_json};
use crate::args::{AwsCommand, Format, Global, JobsArgs};
use crate::failure::CmdResult;

pub fn run(global: &Global, command: &AwsCommand) -> CmdResult {
    match command {
        AwsCommand::Init(args) => {
            let location = S3Location::parse(&args.store)?;
            let store = AwsStore::open(location, &args.table, &data_dir(global)?)?;
            let report = store.init()?;
            if args.format == Format::Json {
                return print_json(&report);
            }
            let said = |created: bool| if created { "created" } else { "already there" };
            println!("bucket {}: {}", report.bucket, said(report.bucket_created));
            println!("table {}: {}", report.table, said(report.table_created));
            Ok(())
        }
    }
}

pub fn jobs(global: &Global, args: &JobsArgs) -> CmdResult {
    let store = index_store(global, &args.store)?;
    let list = jobs::list(store.as_ref(), args.org.as_deref(), args.limit)?;
    if args.format == Format::Json {
        return print_json(&list);
    }
    if list.is_empty() {
        println!("no jobs in {}", store.describe());
        return Ok(());
    }
    for j in &list {
        let version = j.version.map(|v| format!(" v{v}")).unwrap_or_default();
        println!(
            "{}  {}/{} ({})  {:?} at {}{version}  files {} chunked {}  attempts {}",
            j.id,
            j.org,
            j.name,
            j.project,
            j.state,
            j.stage,
            j.files_seen,
            j.files_chunked,
            j.attempts
        );
        if let Some(e) = &j.error {
            println!(
                "    error [{}]: {e}",
                j.error_code.as_deref().unwrap_or("error")
            );
        }
    }
    Ok(())
}
