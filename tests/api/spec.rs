//! The spec drift test: the operations in `openapi.yaml` are exactly the routes the app
//! registers, and the live server serves each of them and nothing else on those paths.

use std::collections::BTreeSet;

use yaml_rust2::{Yaml, YamlLoader};

use crate::helpers::{spawn_app, Backend};

const METHODS: [&str; 6] = ["get", "head", "post", "put", "patch", "delete"];

fn spec_operations() -> BTreeSet<(String, String)> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/openapi.yaml"))
        .expect("openapi.yaml");
    let docs = YamlLoader::load_from_str(&text).expect("openapi.yaml is YAML");
    let paths = docs[0]["paths"].as_hash().expect("the spec has paths");
    let mut operations = BTreeSet::new();
    for (path, item) in paths {
        let path = path.as_str().expect("path keys are strings");
        for method in METHODS {
            if !matches!(item[method], Yaml::BadValue) {
                operations.insert((method.to_uppercase(), path.to_owned()));
            }
        }
    }
    operations
}

fn spec_operations_match_registered_routes(backend: Backend) {
    let registered: BTreeSet<(String, String)> = idempay::ROUTES
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    let documented = spec_operations();
    let undocumented: Vec<_> = registered.difference(&documented).collect();
    let unserved: Vec<_> = documented.difference(&registered).collect();
    assert!(
        undocumented.is_empty() && unserved.is_empty(),
        "in the app only: {undocumented:?}; in the spec only: {unserved:?}"
    );

    // The live server answers every route, and 405 for the other methods on its paths.
    let app = spawn_app(backend);
    let paths: BTreeSet<&str> = registered.iter().map(|(_, p)| p.as_str()).collect();
    for path in paths {
        let concrete = path.replace("{id}", "ord_00000000000000000000000000000000");
        for method in METHODS {
            let method = method.to_uppercase();
            let auth = ("Authorization", "Bearer sk_test_demo");
            let reply = app.request(
                &method,
                &concrete,
                &[
                    auth,
                    ("Idempotency-Key", "drift"),
                    ("Content-Type", "application/json"),
                ],
                "{}",
            );
            // A HEAD answer has no body to read a problem's code from: on these paths,
            // anything but 405 means the method is served (404: no such resource).
            let served = match method.as_str() {
                "HEAD" => reply.status != 405,
                _ => {
                    !matches!(reply.status, 404 | 405)
                        || reply.header("content-type") == Some("application/problem+json")
                            && reply.code() == "resource_not_found"
                }
            };
            let expected = registered.contains(&(method.clone(), path.to_owned()));
            assert_eq!(
                served,
                expected,
                "{method} {path}: {} {}",
                reply.status,
                reply.text()
            );
        }
    }
}

crate::on_both_backends!(spec_operations_match_registered_routes);
