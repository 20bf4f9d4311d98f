//! The compiled-in descriptor set is what gRPC reflection serves: it must
//! decode, hold every service of the API, and keep the documentation comments
//! that are the API's specification.

use std::collections::{BTreeMap, BTreeSet};

use prost::Message as _;
use prost_types::{FileDescriptorProto, FileDescriptorSet};

fn descriptor_set() -> FileDescriptorSet {
    FileDescriptorSet::decode(docket_proto::FILE_DESCRIPTOR_SET).expect("descriptor set decodes")
}

fn docket_files(set: &FileDescriptorSet) -> Vec<&FileDescriptorProto> {
    set.file
        .iter()
        .filter(|file| file.package() == "docket.v1")
        .collect()
}

#[test]
fn every_service_and_rpc_is_present() {
    let set = descriptor_set();
    let services: BTreeMap<String, BTreeSet<String>> = docket_files(&set)
        .iter()
        .flat_map(|file| file.service.iter())
        .map(|service| {
            let methods = service.method.iter().map(|m| m.name().to_owned()).collect();
            (service.name().to_owned(), methods)
        })
        .collect();

    let expected: &[(&str, &[&str])] = &[
        (
            "Ledger",
            &[
                "Append",
                "AppendStream",
                "GetEvent",
                "Tail",
                "GetCheckpoint",
                "GetInclusionProof",
                "GetConsistencyProof",
            ],
        ),
        ("Keys", &["RegisterKey", "RevokeKey", "ListKeys"]),
        ("Tasks", &["RegisterTask", "GetTask"]),
        (
            "Evidence",
            &[
                "Upload",
                "Register",
                "GetEvidence",
                "Download",
                "ListEvidence",
            ],
        ),
        ("Executions", &["RecordExecution"]),
        ("Submissions", &["Submit"]),
        (
            "Verdicts",
            &[
                "RecordCheck",
                "IssueVerdict",
                "GetVerdict",
                "ListVerdicts",
                "WatchVerdicts",
                "ImportVerdict",
                "ReproduceVerdict",
            ],
        ),
        (
            "Approvals",
            &["RequestApproval", "GrantApproval", "DenyApproval"],
        ),
        (
            "Retention",
            &[
                "SetPolicy",
                "Pin",
                "Unpin",
                "Reclassify",
                "Redact",
                "Sweep",
                "GetStatus",
            ],
        ),
        ("Export", &["ExportBundle"]),
        ("Admin", &["GetStatus"]),
    ];
    let expected: BTreeMap<String, BTreeSet<String>> = expected
        .iter()
        .map(|(service, methods)| {
            let methods = methods.iter().map(|m| (*m).to_owned()).collect();
            ((*service).to_owned(), methods)
        })
        .collect();
    assert_eq!(services, expected);
}

#[test]
fn streaming_shapes_are_as_documented() {
    let set = descriptor_set();
    let shape = |service: &str, method: &str| -> (bool, bool) {
        let m = docket_files(&set)
            .iter()
            .flat_map(|f| f.service.iter())
            .filter(|s| s.name() == service)
            .flat_map(|s| s.method.iter())
            .find(|m| m.name() == method)
            .unwrap_or_else(|| panic!("{service}.{method} missing"));
        (m.client_streaming(), m.server_streaming())
    };
    assert_eq!(shape("Ledger", "Tail"), (false, true));
    assert_eq!(shape("Ledger", "AppendStream"), (true, true));
    assert_eq!(shape("Evidence", "Upload"), (true, false));
    assert_eq!(shape("Evidence", "Download"), (false, true));
    assert_eq!(shape("Verdicts", "WatchVerdicts"), (false, true));
    assert_eq!(shape("Export", "ExportBundle"), (false, true));
    assert_eq!(shape("Ledger", "Append"), (false, false));
}

/// Every service, rpc, message, field, enum and enum value carries a leading
/// comment: the comments are the API specification for other languages.
#[test]
fn every_element_is_documented() {
    // Field numbers of the descriptor.proto paths used in SourceCodeInfo.
    const MESSAGE: i32 = 4;
    const ENUM: i32 = 5;
    const SERVICE: i32 = 6;
    const MESSAGE_FIELD: i32 = 2;
    const ENUM_VALUE: i32 = 2;
    const METHOD: i32 = 2;

    let set = descriptor_set();
    let mut undocumented = Vec::new();
    for file in docket_files(&set) {
        let info = file.source_code_info.as_ref().expect("source info kept");
        let documented: BTreeSet<Vec<i32>> = info
            .location
            .iter()
            .filter(|l| !l.leading_comments().trim().is_empty())
            .map(|l| l.path.clone())
            .collect();
        let mut check = |path: Vec<i32>, what: String| {
            if !documented.contains(&path) {
                undocumented.push(format!("{}: {what}", file.name()));
            }
        };
        for (i, message) in file.message_type.iter().enumerate() {
            let i = i32::try_from(i).unwrap();
            check(vec![MESSAGE, i], format!("message {}", message.name()));
            for (j, field) in message.field.iter().enumerate() {
                let j = i32::try_from(j).unwrap();
                check(
                    vec![MESSAGE, i, MESSAGE_FIELD, j],
                    format!("field {}.{}", message.name(), field.name()),
                );
            }
        }
        for (i, enumeration) in file.enum_type.iter().enumerate() {
            let i = i32::try_from(i).unwrap();
            check(vec![ENUM, i], format!("enum {}", enumeration.name()));
            for (j, value) in enumeration.value.iter().enumerate() {
                let j = i32::try_from(j).unwrap();
                check(
                    vec![ENUM, i, ENUM_VALUE, j],
                    format!("value {}", value.name()),
                );
            }
        }
        for (i, service) in file.service.iter().enumerate() {
            let i = i32::try_from(i).unwrap();
            check(vec![SERVICE, i], format!("service {}", service.name()));
            for (j, method) in service.method.iter().enumerate() {
                let j = i32::try_from(j).unwrap();
                check(
                    vec![SERVICE, i, METHOD, j],
                    format!("rpc {}.{}", service.name(), method.name()),
                );
            }
        }
    }
    assert!(undocumented.is_empty(), "undocumented: {undocumented:#?}");
}

#[test]
fn generated_code_is_usable() {
    use docket_proto::v1::{AppendReceipt, SignedStatement};

    let statement = SignedStatement {
        kind: "task.registered".into(),
        payload: b"{}".to_vec(),
        author_public_key: vec![7; 32],
        signature: vec![9; 64],
    };
    let bytes = statement.encode_to_vec();
    assert_eq!(SignedStatement::decode(&bytes[..]).unwrap(), statement);
    let receipt = AppendReceipt::default();
    assert!(!receipt.duplicate);
}
