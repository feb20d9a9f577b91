//! The ctxgate indexer as an AWS Lambda function (`provided.al2023`); see
//! `ctxgate_indexer::lambda` for its events and configuration.

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    ctxgate_indexer::lambda::main()
}
