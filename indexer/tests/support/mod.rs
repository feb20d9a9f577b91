//! What the AWS integration tests start: moto's server (S3 + DynamoDB protocols), a fault-injecting
//! proxy in front of it, a Lambda Runtime API endpoint for the real function binary, and the
//! checks a reader's view must pass after any crash or fault.

#![allow(dead_code)]

pub mod fault_proxy;
pub mod moto;
pub mod repo;
pub mod runtime_api;
pub mod verify;
