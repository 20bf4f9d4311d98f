//! One key, one spelling: a public key is 64 lowercase hex digits and
//! nothing else, in every statement that names one, so the last-admin guard
//! can never be fooled into counting one key as two.

mod domain_support;

use docket_domain::LedgerError;
use docket_domain::keys::Role;
use domain_support::*;
use serde_json::json;

/// Every other spelling of `hex` we can think of.
fn spellings(hex: &str) -> Vec<(&'static str, String)> {
    vec![
        ("upper case", hex.to_ascii_uppercase()),
        ("mixed case", {
            // Upper-case the first letter: upper-casing digits changes
            // nothing (a key whose first digits are all decimal would
            // otherwise be spelled canonically here).
            let i = hex.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(0);
            let mut s = hex.to_string();
            s.replace_range(i..i + 1, &hex[i..i + 1].to_ascii_uppercase());
            s
        }),
        ("leading space", format!(" {hex}")),
        ("trailing space", format!("{hex} ")),
        ("trailing newline", format!("{hex}\n")),
        ("tab", format!("\t{hex}")),
        ("0x prefix", format!("0x{hex}")),
        ("short", hex[..62].to_string()),
        ("long", format!("{hex}00")),
    ]
}

fn assert_invalid_naming_field(r: Result<docket_domain::Receipt, LedgerError>, case: &str) {
    match r {
        Err(LedgerError::Invalid { violations, .. }) => assert!(
            violations.iter().any(|v| v.contains("public_key")),
            "{case}: {violations:?}"
        ),
        Err(LedgerError::Malformed { what, .. }) => {
            assert!(what.contains("public key"), "{case}: {what}")
        }
        other => panic!("{case}: expected INVALID naming public_key, got {other:?}"),
    }
}

#[test]
fn given_another_spelling_of_a_key_when_registered_then_it_is_refused() {
    let fx = Fixture::new();
    let k = docket_domain::keys::generate().unwrap();
    let hex = hex::encode(k.verifying_key().to_bytes());
    for (case, spelled) in spellings(&hex) {
        let r = fx.append(
            "key.registered",
            &json!({"public_key": spelled, "roles": ["admin"]}),
            &fx.admin,
        );
        assert_invalid_naming_field(r, case);
    }
    // The canonical spelling is accepted, once.
    fx.append(
        "key.registered",
        &json!({"public_key": hex, "roles": ["admin"]}),
        &fx.admin,
    )
    .unwrap();
}

#[test]
fn given_the_last_admin_when_revoked_in_any_spelling_then_it_stays() {
    let fx = Fixture::new();
    let admin_hex = hex::encode(fx.admin.verifying_key().to_bytes());
    // Every other spelling of the only admin key: refused as invalid, so it
    // can neither be registered as a "second" admin nor revoked by alias.
    for (case, spelled) in spellings(&admin_hex) {
        let r = fx.append(
            "key.registered",
            &json!({"public_key": spelled, "roles": ["admin"]}),
            &fx.admin,
        );
        assert_invalid_naming_field(r, case);
        let r = fx.append("key.revoked", &json!({"public_key": spelled}), &fx.admin);
        assert_invalid_naming_field(r, case);
    }
    // Canonically, the guard holds: the last admin cannot be revoked.
    let r = fx.append("key.revoked", &json!({"public_key": admin_hex}), &fx.admin);
    assert!(
        matches!(r, Err(LedgerError::FailedPrecondition(ref m)) if m.contains("last active admin")),
        "{r:?}"
    );
    // And the admin still acts.
    fx.key(&[Role::Submitter]);
}
