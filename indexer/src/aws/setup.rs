//! `ctxgate aws init`: the bucket and the table, created when missing (first deploys without
//! the template, and local AWS-protocol servers).

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType, TableStatus,
};
use aws_sdk_s3::types::{BucketLocationConstraint, CreateBucketConfiguration};
use serde::Serialize;

use super::{AwsStore, remote};
use crate::IndexerError;
use ctxgate_core::item_key::attr::{PK, SK};

/// What `init` found and did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InitReport {
    /// The bucket.
    pub bucket: String,
    /// Whether this call created it.
    pub bucket_created: bool,
    /// The table.
    pub table: String,
    /// Whether this call created it.
    pub table_created: bool,
}

impl AwsStore {
    /// Creates the bucket and the table when they do not exist, and waits until the table is
    /// active. Safe to run again.
    pub fn init(&self) -> Result<InitReport, IndexerError> {
        let bucket_created = self.create_bucket()?;
        let table_created = self.create_table()?;
        Ok(InitReport {
            bucket: self.location.bucket.clone(),
            bucket_created,
            table: self.table.clone(),
            table_created,
        })
    }

    fn create_bucket(&self) -> Result<bool, IndexerError> {
        let bucket = &self.location.bucket;
        let exists = self.block(self.s3.head_bucket().bucket(bucket).send());
        match exists {
            Ok(_) => return Ok(false),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_not_found()) => {}
            Err(e) => {
                return Err(remote(
                    format!("S3 HEAD bucket {bucket}"),
                    aws_sdk_s3::error::DisplayErrorContext(e),
                ));
            }
        }
        let mut req = self.s3.create_bucket().bucket(bucket);
        // us-east-1 is the one region that refuses an explicit location constraint.
        if let Some(region) = self.s3.config().region().map(|r| r.as_ref().to_string())
            && region != "us-east-1"
        {
            req = req.create_bucket_configuration(
                CreateBucketConfiguration::builder()
                    .location_constraint(BucketLocationConstraint::from(region.as_str()))
                    .build(),
            );
        }
        match self.block(req.send()) {
            Ok(_) => Ok(true),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_bucket_already_owned_by_you()) =>
            {
                Ok(false)
            }
            Err(e) => Err(remote(
                format!("S3 CreateBucket {bucket}"),
                aws_sdk_s3::error::DisplayErrorContext(e),
            )),
        }
    }

    fn create_table(&self) -> Result<bool, IndexerError> {
        let key = |name: &str, kind: KeyType| {
            KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(kind)
                .build()
        };
        let attr = |name: &str| {
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(ScalarAttributeType::S)
                .build()
        };
        let (Ok(hash), Ok(range), Ok(pk), Ok(sk)) = (
            key(PK, KeyType::Hash),
            key(SK, KeyType::Range),
            attr(PK),
            attr(SK),
        ) else {
            return Err(remote("build the table schema", "invalid key schema"));
        };
        let created = self.block(
            self.dynamo
                .create_table()
                .table_name(&self.table)
                .billing_mode(BillingMode::PayPerRequest)
                .key_schema(hash)
                .key_schema(range)
                .attribute_definitions(pk)
                .attribute_definitions(sk)
                .send(),
        );
        let created = match created {
            Ok(_) => true,
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_resource_in_use_exception()) =>
            {
                false
            }
            Err(e) => {
                return Err(remote(
                    format!("DynamoDB CreateTable {}", self.table),
                    aws_sdk_dynamodb::error::DisplayErrorContext(e),
                ));
            }
        };
        // A new table takes a while to become usable on real DynamoDB.
        for _ in 0..120 {
            let d = self
                .block(self.dynamo.describe_table().table_name(&self.table).send())
                .map_err(|e| {
                    remote(
                        format!("DynamoDB DescribeTable {}", self.table),
                        aws_sdk_dynamodb::error::DisplayErrorContext(e),
                    )
                })?;
            if d.table().and_then(|t| t.table_status()) == Some(&TableStatus::Active) {
                return Ok(created);
            }
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
        Err(remote(
            format!("DynamoDB table {}", self.table),
            "not active after 60 s",
        ))
    }
}
