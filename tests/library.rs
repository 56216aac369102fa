//! Issue 31: the program library. Each module (`include = ["programs:NAME"]`) holds program
//! rules only; the modules extracted from the shipped policies compile, rule for rule, to the
//! shipped developer policy's rules (so the option-effect oracle's proof of those holds for
//! them); the read-only docker and kubectl modules refuse what writes, runs, moves data or
//! changes who acts; a policy composes modules with its own `[paths]`.

use shellgate::{Context, Policy, Verdict};

fn rule_json(r: &shellgate::policy::ProgramRule) -> serde_json::Value {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                m.remove("location");
                m.remove("extended_by");
                // How the options were written (a table or the old lists) is not what they say.
                m.remove("option_table");
                m.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v = serde_json::to_value(r).expect("a rule serialises");
    let subs: serde_json::Map<String, serde_json::Value> = r
        .subcommands
        .iter()
        .map(|(n, s)| (n.clone(), rule_json(s)))
        .collect();
    v["subcommands"] = serde_json::Value::Object(subs);
    if let Some(dd) = &r.after_double_dash {
        v["after_double_dash"] = rule_json(dd);
    }
    strip(&mut v);
    v
}

fn module(name: &str) -> Policy {
    Policy::from_toml(
        &format!("[policy]\ninclude = [\"programs:{name}\"]\n"),
        "m.toml",
    )
    .unwrap_or_else(|e| panic!("programs:{name}: {e}"))
}

#[test]
fn the_extracted_modules_compile_to_the_shipped_rules() {
    let developer = Policy::shipped("developer").unwrap();
    let mut seen = 0;
    for (name, _) in shellgate::policy::LIBRARY {
        if name.ends_with("-read") {
            continue; // written for the library, not extracted
        }
        let m = module(name);
        assert!(
            m.programs.keys().next().is_some(),
            "programs:{name} is empty"
        );
        for (program, rule) in m.programs.iter() {
            let shipped = developer
                .programs
                .get(program)
                .unwrap_or_else(|| panic!("programs:{name}: `{program}` is not in developer"));
            let mut a = rule_json(rule);
            let mut b = rule_json(shipped);
            // What developer's own rule dropped of read-only's when it replaced it.
            a["replaced"] = serde_json::Value::Null;
            b["replaced"] = serde_json::Value::Null;
            assert_eq!(
                a, b,
                "programs:{name}: `{program}` differs from developer's rule"
            );
            seen += 1;
        }
    }
    assert!(seen >= 55, "{seen} rules compared");
}

#[test]
fn a_module_holds_only_programs_and_an_unknown_one_is_an_error() {
    let e = Policy::from_toml("[policy]\ninclude = [\"programs:nope\"]\n", "p.toml").unwrap_err();
    let d = &e.diagnostics()[0];
    assert_eq!(d.code, "policy-include");
    assert!(d.message.contains("programs:coreutils"), "{}", d.message);
    for (name, text) in shellgate::policy::LIBRARY {
        let raw: toml::Table = toml::from_str(text).unwrap();
        let keys: Vec<&String> = raw.keys().collect();
        assert_eq!(keys, ["programs"], "programs:{name} holds {keys:?}");
    }
}

#[test]
fn a_policy_composes_modules_with_its_own_paths() {
    let p = Policy::from_toml(
        r#"
[policy]
include = ["programs:coreutils", "programs:findutils", "programs:git"]

[paths]
read = ["{workspace}", "{workspace}/**"]
write = ["{workspace}/out", "{workspace}/out/**"]
"#,
        "p.toml",
    )
    .unwrap();
    let ctx = Context::example();
    let v = |c: &str| p.evaluate(&ctx, c).verdict;
    assert_eq!(v("ls -la src"), Verdict::Allow);
    assert_eq!(v("find . -name '*.rs'"), Verdict::Allow);
    assert_eq!(v("git status"), Verdict::Allow);
    assert_eq!(v("cp src/a.txt out/a.txt"), Verdict::Allow);
    assert_eq!(
        v("cp src/a.txt src/b.txt"),
        Verdict::Deny,
        "not a write root"
    );
    assert_eq!(v("cat /etc/shadow"), Verdict::Deny);
    assert_eq!(v("find . -delete"), Verdict::Deny);
    assert_eq!(v("curl x"), Verdict::Deny, "no module has it");
}

fn read_modules() -> Policy {
    Policy::from_toml(
        r#"
[policy]
include = ["read-only", "programs:docker-read", "programs:kubectl-read"]
"#,
        "p.toml",
    )
    .unwrap()
}

#[test]
fn docker_and_kubectl_read_allow_reads_only() {
    let p = read_modules();
    let ctx = Context::example();
    let v = |c: &str| p.evaluate(&ctx, c).verdict;
    for ok in [
        "docker ps -a",
        "docker ps --format '{{.Names}}'",
        "docker images -q",
        "docker logs -f --tail 100 web",
        "docker inspect -f '{{.State.Status}}' web",
        "docker history -H img",
        "docker container ls -a",
        "docker image ls",
        "docker system df -v",
        "docker stats --no-stream",
        "docker -D version",
        "kubectl get pods",
        "kubectl get pods -n kube-system -o wide",
        "kubectl -n prod get deploy -o yaml",
        "kubectl get pods -o jsonpath='{.items[*].metadata.name}'",
        "kubectl describe pod web-1",
        "kubectl logs -f deploy/web -c app --since=1h",
        "kubectl top pod -A",
        "kubectl config current-context",
        "kubectl config get-contexts",
        "kubectl api-resources --namespaced=true",
        "kubectl auth can-i list pods",
        "kubectl version --client -o json",
        "kubectl explain pod.spec --recursive",
    ] {
        assert_eq!(v(ok), Verdict::Allow, "{ok}: {:?}", p.evaluate(&ctx, ok));
    }
    for bad in [
        // Runs, enters or starts a container.
        "docker run alpine",
        "docker exec web sh",
        "docker attach web",
        "docker start web",
        "docker container exec web sh",
        // Writes, copies, moves images.
        "docker cp web:/etc/passwd .",
        "docker rm web",
        "docker image rm img",
        "docker build .",
        "docker pull alpine",
        "docker save img -o x.tar",
        "docker system prune -f",
        "docker login",
        // Another daemon, config or credentials.
        "docker -H ssh://evil ps",
        "docker --host=tcp://evil:2375 ps",
        "docker --context prod ps",
        "docker --config /tmp/c ps",
        "docker --tlscert /tmp/c ps",
        // kubectl writes, runs, forwards, copies.
        "kubectl apply -f x.yaml",
        "kubectl delete pod web",
        "kubectl edit deploy web",
        "kubectl exec -it web -- sh",
        "kubectl run x --image=alpine",
        "kubectl debug web",
        "kubectl attach web",
        "kubectl cp web:/etc/passwd x",
        "kubectl port-forward web 8080:80",
        "kubectl proxy",
        "kubectl scale deploy web --replicas=0",
        "kubectl rollout restart deploy/web",
        "kubectl label pod web a=b",
        "kubectl config use-context prod",
        "kubectl config set-credentials x --token=y",
        "kubectl cluster-info dump",
        "kubectl auth reconcile -f x",
        // Another kubeconfig, server or identity; files read through output formats.
        "kubectl get pods --kubeconfig /tmp/k",
        "kubectl --kubeconfig=/tmp/k get pods",
        "kubectl get pods --server https://evil",
        "kubectl get pods -s https://evil",
        "kubectl get pods --as system:admin",
        "kubectl get pods --token abc",
        "kubectl get pods --v=9",
        "kubectl get pods -o jsonpath-file=/etc/shadow",
        "kubectl get pods -o go-template-file=/etc/shadow",
        "kubectl get pods -o custom-columns-file=/etc/shadow",
        "kubectl get --raw /api/v1/namespaces/default/secrets",
        "kubectl get -k .",
        "kubectl get -f /etc/shadow",
        "kubectl config view --raw",
        "kubectl config view --flatten",
    ] {
        assert_eq!(v(bad), Verdict::Deny, "{bad}: {:?}", p.evaluate(&ctx, bad));
    }
    // The values of secrets are credentials: asked for.
    for ask in [
        "kubectl get secrets",
        "kubectl get secret db -o yaml",
        "kubectl get pods,secrets",
        "kubectl get secrets/db",
    ] {
        assert_eq!(v(ask), Verdict::Ask, "{ask}: {:?}", p.evaluate(&ctx, ask));
    }
}
