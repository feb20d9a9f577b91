//! What the AWS integration tests start: moto's server (S3 + DynamoDB protocols) and a Lambda
//! Runtime API endpoint for the real function binary.

#![allow(dead_code)]

pub mod moto;
pub mod repo;
pub mod runtime_api;
