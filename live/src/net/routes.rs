//! Every endpoint of the coordinator's API, in one table ([`ROUTES`]): its method, its path
//! pattern, who may call it and its handler. Everything else about endpoints is derived from
//! it: the answer to a path no route has (404) or to a method its path does not take (405,
//! with `Allow`), the token check (a user's token cannot act as an agent, nor an agent's as a
//! user or as another agent: see [`crate::net::auth`]), the mutual-TLS identity check (which
//! routes name an agent, and where), and the endpoint list of docs/live-mode.md, which a test
//! compares with the table. Adding an endpoint is one row here and its handler.

use crate::coordinator::Coordinator;
use crate::coordinator::metrics::CONTENT_TYPE;
use crate::net::auth::Principal;
use crate::net::http::{Answer, Call, Method};
use crate::wire::Refusal;
use Caller::{Agent, User};
use Method::{Get, Post};
use serde_json::{Value, json};

/// Who may call an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Caller {
    /// The user token.
    User,
    /// An agent's token, for that agent only: the call names the agent it is for where
    /// [`Named`] says, and under mutual TLS its certificate must be for that name.
    Agent(Named),
}

/// Where a call for an agent names the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Named {
    /// The JSON body's `name`.
    Body,
    /// The path's `{name}` segment.
    Path,
}

impl Caller {
    /// As docs/live-mode.md's endpoint table says it (what its test compares).
    #[cfg(test)]
    fn docs(self) -> &'static str {
        match self {
            User => "user",
            Agent(Named::Body) => "agent (as itself)",
            Agent(Named::Path) => "agent `{name}`",
        }
    }
}

/// Answers one call; a refusal is answered with its status and reason, and logged.
pub(crate) type Handler = fn(&mut Coordinator, &Request<'_>) -> Result<Answer, Refusal>;

pub(crate) struct Route {
    pub method: Method,
    /// `/v1/jobs/{job}/cancel`: a `{…}` segment matches any one segment, which the handler
    /// takes by its name ([`Request::param`]).
    pub path: &'static str,
    pub caller: Caller,
    pub handler: Handler,
}

const fn route(method: Method, path: &'static str, caller: Caller, handler: Handler) -> Route {
    Route { method, path, caller, handler }
}

fn json((status, body): (u16, Value)) -> Answer {
    Answer::json(status, &body)
}

fn ok(body: Value) -> Result<Answer, Refusal> {
    Ok(Answer::json(200, &body))
}

/// The API, in the order docs/live-mode.md lists it.
pub(crate) static ROUTES: &[Route] = &[
    route(Post, "/v1/jobs", User, |c, r| c.submit(r.json()?).map(json)),
    route(Get, "/v1/jobs", User, |c, r| ok(c.jobs_json(r.query_u64("after"), r.query_u64("limit")))),
    route(Get, "/v1/jobs/{job}", User, |c, r| ok(c.job_json(c.find_job(r.param("job"))?))),
    route(Post, "/v1/jobs/{job}/cancel", User, |c, r| c.cancel(r.param("job")).map(json)),
    route(Get, "/v1/cluster", User, |c, _| ok(c.cluster_json())),
    route(Get, "/v1/forecast", User, |c, _| ok(c.forecast_json()?)),
    route(Post, "/v1/gpus/{uuid}/return", User, |c, r| c.return_gpu(r.param("uuid")).map(json)),
    route(Get, "/v1/decisions", User, |c, r| ok(c.decisions_json(r.query_u64("after"), r.query_u64("limit")))),
    route(Get, "/metrics", User, |c, _| Ok(Answer::text(CONTENT_TYPE, c.metrics_text()))),
    route(Post, "/v1/agents/register", Agent(Named::Body), |c, r| c.register(r.agent_json(c)?).map(json)),
    route(Post, "/v1/agents/heartbeat", Agent(Named::Body), |c, r| c.heartbeat(r.agent_json(c)?).map(json)),
    route(Get, "/v1/agents/{name}/assignments", Agent(Named::Path), |c, r| {
        c.assignments(r.param("name"), r.query_u64("generation").unwrap_or(0)).map(json)
    }),
];

/// A request's path (without its query) and its segments: what the routes match on.
fn path_parts(url: &str) -> (&str, Vec<&str>) {
    let path = url.split('?').next().unwrap_or("");
    (path, path.trim_matches('/').split('/').collect())
}

impl Route {
    /// The `{…}` segments of `parts` (each with its name), if this route's pattern matches them.
    fn captures<'u>(&self, parts: &[&'u str]) -> Option<Vec<(&'static str, &'u str)>> {
        let pattern: Vec<&'static str> = self.path.trim_matches('/').split('/').collect();
        if pattern.len() != parts.len() {
            return None;
        }
        let mut params = Vec::new();
        for (segment, &part) in pattern.into_iter().zip(parts) {
            match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                Some(name) => params.push((name, part)),
                None if segment == part => {}
                None => return None,
            }
        }
        Some(params)
    }
}

/// A call as its handler takes it.
pub(crate) struct Request<'a> {
    params: Vec<(&'static str, &'a str)>,
    url: &'a str,
    body: &'a [u8],
    access: Access<'a>,
}

/// A body that names the agent it is for (the JSON's `name`).
pub(crate) trait AgentBody: serde::de::DeserializeOwned {
    fn agent(&self) -> &str;
}

impl AgentBody for crate::wire::RegisterRequest {
    fn agent(&self) -> &str {
        &self.name
    }
}

impl AgentBody for crate::wire::HeartbeatRequest {
    fn agent(&self) -> &str {
        &self.name
    }
}

/// Who made a call (its token, its certificate) and whether the coordinator runs mutual TLS:
/// what decides whether it may act for an agent.
#[derive(Clone, Copy)]
struct Access<'a> {
    call: &'a Call,
    mutual_tls: bool,
}

impl Access<'_> {
    /// Whether the call may act for agent `claimed`: its token is that agent's, and under
    /// mutual TLS its certificate was issued for that name (`live issue-cert --name NAME`): a
    /// user's certificate, or another agent's, cannot act as an agent and be given its tasks.
    fn acts_for(&self, path: &str, claimed: &str) -> Result<(), Denied> {
        if let Principal::Agent(name) = &self.call.principal
            && name != claimed
        {
            let reason = format!("{path}: agent `{name}`'s token cannot act for agent `{claimed}`");
            return Err(Denied { who: name.clone(), reason });
        }
        match &self.call.client_cert {
            Some(cert) if self.mutual_tls && !crate::net::tls::certificate_is_for(cert, claimed) => {
                let reason = format!(
                    "{path}: the client certificate is not for agent `{claimed}` (under mutual TLS an agent shows one issued for its name: live issue-cert --name {claimed})"
                );
                Err(Denied { who: claimed.to_string(), reason })
            }
            _ => Ok(()),
        }
    }
}

impl<'a> Request<'a> {
    /// The path segment the route's pattern names `{name}`.
    pub fn param(&self, name: &str) -> &'a str {
        let found = self.params.iter().find(|(n, _)| *n == name).map(|&(_, value)| value);
        debug_assert!(found.is_some(), "the route's pattern has no {{{name}}}");
        found.unwrap_or("")
    }

    /// The number `name=N` of the query, if it has one.
    pub fn query_u64(&self, name: &str) -> Option<u64> {
        let query = self.url.split_once('?')?.1;
        query.split('&').find_map(|kv| kv.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
    }

    /// The body, as the JSON of a `T`.
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, Refusal> {
        serde_json::from_slice(self.body).map_err(|e| Refusal::bad(format!("malformed request body: {e}")))
    }

    /// The body of an agent's call, as the JSON of a `T`, if the caller may act for the agent
    /// it names: the name checked is the one this very parse gives the handler, so no body
    /// can read as one agent to the check and as another to the handler (a refusal is
    /// recorded as `coordinator` records every denied call).
    pub fn agent_json<T: AgentBody>(&self, coordinator: &Coordinator) -> Result<T, Refusal> {
        let body: T = self.json()?;
        let path = self.url.split('?').next().unwrap_or("");
        self.access.acts_for(path, body.agent()).map_err(|d| coordinator.denied(d))?;
        Ok(body)
    }
}

/// Where a call goes: the routes of its path (one per method the path takes; none for a path
/// the API does not have) and what the path's `{…}` segments hold.
pub(crate) struct Routed<'c> {
    call: &'c Call,
    path: &'c str,
    routes: Vec<&'static Route>,
    params: Vec<(&'static str, &'c str)>,
}

/// Why a call may not reach its route: who made it (for the record of refusals) and why.
pub(crate) struct Denied {
    pub who: String,
    pub reason: String,
}

impl<'c> Routed<'c> {
    pub fn new(call: &'c Call) -> Routed<'c> {
        let (path, parts) = path_parts(&call.url);
        let mut routed = Routed { call, path, routes: Vec::new(), params: Vec::new() };
        for route in ROUTES {
            if let Some(params) = route.captures(&parts) {
                routed.routes.push(route);
                routed.params = params;
            }
        }
        routed
    }

    /// Who may call the path (whatever the method: each path has one caller). None: no such path.
    fn caller(&self) -> Option<Caller> {
        self.routes.first().map(|r| r.caller)
    }

    /// Whether the call may reach its route: under mutual TLS (`mutual_tls`), a certificate;
    /// its token's role (see [`Routed::check_role`]); and for a route naming its agent in the
    /// path, that it may act for that agent. A route naming its agent in the body checks that
    /// in the handler's own typed parse ([`Request::agent_json`]).
    pub fn check_access(&self, mutual_tls: bool) -> Result<(), Denied> {
        let path = self.path;
        if mutual_tls && self.call.client_cert.is_none() {
            let reason =
                format!("{path}: no client certificate (under mutual TLS every call comes over https with one)");
            return Err(Denied { who: "a client".into(), reason });
        }
        self.check_role()?;
        match self.caller() {
            Some(Agent(Named::Path)) => {
                let claimed = self.params.iter().find(|(n, _)| *n == "name").map_or("", |(_, v)| v);
                Access { call: self.call, mutual_tls }.acts_for(path, claimed)
            }
            _ => Ok(()),
        }
    }

    /// Every path has one caller: a user's token cannot act as an agent, nor an agent's as a
    /// user (which agent it may act for is [`Access::acts_for`]'s question).
    fn check_role(&self) -> Result<(), Denied> {
        let Some(caller) = self.caller() else { return Ok(()) };
        let path = self.path;
        let reason = match (&self.call.principal, caller) {
            (Principal::User, User) => return Ok(()),
            (Principal::User, Agent(_)) => format!(
                "{path}: a user token cannot act as an agent (an agent has a token of its own: schedlab live issue-token --agent NAME)"
            ),
            (Principal::Agent(name), User) => {
                format!(
                    "{path}: agent `{name}`'s token is for its agent's calls only (register, heartbeat, assignments)"
                )
            }
            (Principal::Agent(_), Agent(_)) => return Ok(()),
        };
        let who = match &self.call.principal {
            Principal::User => "a user".to_string(),
            Principal::Agent(name) => name.clone(),
        };
        Err(Denied { who, reason })
    }

    /// The route of the call's method: 404 for a path the API does not have, 405 for a method
    /// it does not take there.
    fn route(&self) -> Result<&'static Route, Refusal> {
        let (method, path) = (&self.call.method, self.path);
        match self.routes.iter().find(|r| r.method == *method) {
            Some(route) => Ok(route),
            None if self.routes.is_empty() => Err(Refusal::new(404, format!("no such endpoint: {path}"))),
            None => Err(Refusal::new(405, format!("{method} is not allowed on {path}"))),
        }
    }

    /// The call's answer, by its route's handler.
    pub fn answer(&self, coordinator: &mut Coordinator, mutual_tls: bool) -> Result<Answer, Refusal> {
        let route = self.route()?;
        let access = Access { call: self.call, mutual_tls };
        let request = Request { params: self.params.clone(), url: &self.call.url, body: &self.call.body, access };
        (route.handler)(coordinator, &request)
    }

    /// The answer to `refusal`: its status and reason, and with a 405 the methods the path
    /// takes (`Allow`).
    pub fn refused(&self, refusal: &Refusal) -> Answer {
        let answer = Answer::json(refusal.status, &json!({ "error": refusal.reason }));
        if refusal.status != 405 {
            return answer;
        }
        let mut methods: Vec<String> = self.routes.iter().map(|r| r.method.to_string()).collect();
        methods.sort();
        answer.allowing(methods.join(", "))
    }
}

/// The table as docs/live-mode.md's "Endpoints" section lists it: one row of cells (method,
/// path, who may call) per route (what its test compares).
#[cfg(test)]
fn docs_rows() -> Vec<[String; 3]> {
    let code = |text: String| format!("`{text}`");
    ROUTES.iter().map(|r| [code(r.method.to_string()), code(r.path.to_string()), r.caller.docs().to_string()]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows of the first table after `## Endpoints` in `markdown`, without its header and
    /// its `|---|` line, each as its cells.
    fn endpoints_table(markdown: &str) -> Vec<[String; 3]> {
        let section = markdown.split_once("\n## Endpoints\n").map_or("", |(_, rest)| rest);
        let section = section.split("\n## ").next().unwrap_or("");
        let table = section.lines().skip_while(|l| !l.starts_with('|')).take_while(|l| l.starts_with('|'));
        table
            .skip(2)
            .map(|line| {
                let cells: Vec<String> =
                    line.trim().trim_matches('|').split('|').map(|c| c.trim().to_string()).collect();
                let cell = |i: usize| cells.get(i).cloned().unwrap_or_default();
                [cell(0), cell(1), cells[2..].join("|")]
            })
            .collect()
    }

    /// None when both lists have the same rows in the same order; else what differs, naming
    /// the rows found on one side only.
    fn differences(docs: &[[String; 3]], table: &[[String; 3]]) -> Option<String> {
        if docs == table {
            return None;
        }
        let show = |rows: Vec<&[String; 3]>| {
            let lines: Vec<String> = rows.iter().map(|r| format!("  | {} |", r.join(" | "))).collect();
            if lines.is_empty() { "  (none)".to_string() } else { lines.join("\n") }
        };
        let only_docs = docs.iter().filter(|r| !table.contains(r)).collect();
        let only_table = table.iter().filter(|r| !docs.contains(r)).collect();
        Some(format!(
            "docs/live-mode.md's Endpoints table and the routes table (live/src/net/routes.rs) differ.\nonly in the docs:\n{}\nonly in the routes table:\n{}\n(when both say none, the rows are the same but in another order)",
            show(only_docs),
            show(only_table)
        ))
    }

    #[test]
    fn the_routes_table_covers_every_endpoint_the_docs_list_and_nothing_else() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/live-mode.md");
        let docs = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let listed = endpoints_table(&docs);
        assert!(!listed.is_empty(), "{path}: no table under `## Endpoints`");
        if let Some(why) = differences(&listed, &docs_rows()) {
            panic!("{why}");
        }
    }

    #[test]
    fn a_difference_between_the_docs_and_the_table_names_the_rows_on_each_side() {
        let docs = "# Live\n\n## Endpoints\n\nIntro.\n\n| method | path | who may call |\n|---|---|---|\n\
                    | `GET` | `/metrics` | user |\n| `GET` |  `/v1/gone`| user |\n\nAfter.\n\n## Next\n\n| x | y | z |\n";
        let listed = endpoints_table(docs);
        let row = |m: &str, p: &str, w: &str| [m.to_string(), p.to_string(), w.to_string()];
        assert_eq!(listed, [row("`GET`", "`/metrics`", "user"), row("`GET`", "`/v1/gone`", "user")]);
        let why = differences(&listed, &docs_rows()).unwrap();
        let (docs_side, table_side) = why.split_once("only in the routes table:").unwrap();
        assert!(docs_side.contains("| `GET` | `/v1/gone` | user |") && !docs_side.contains("/metrics"), "{why}");
        assert!(table_side.contains("| `POST` | `/v1/jobs` | user |"), "{why}");
        assert!(table_side.contains("| `GET` | `/v1/agents/{name}/assignments` | agent `{name}` |"), "{why}");
        assert!(!table_side.contains("/metrics"), "{why}");
        // The same rows in another order differ too.
        let mut swapped = docs_rows();
        swapped.swap(0, 1);
        assert!(differences(&swapped, &docs_rows()).unwrap().contains("in another order"));
        assert_eq!(differences(&docs_rows(), &docs_rows()), None);
    }

    #[test]
    fn no_two_patterns_match_one_path_and_each_path_has_one_caller() {
        let segments = |r: &Route| r.path.trim_matches('/').split('/').collect::<Vec<_>>();
        let placeholder = |s: &str| s.starts_with('{');
        for (i, a) in ROUTES.iter().enumerate() {
            for b in &ROUTES[i + 1..] {
                let (sa, sb) = (segments(a), segments(b));
                if a.path == b.path {
                    assert_ne!(a.method, b.method, "{} twice", a.path);
                    assert_eq!(a.caller, b.caller, "{}: one caller for every method", a.path);
                    continue;
                }
                let overlap =
                    sa.len() == sb.len() && sa.iter().zip(&sb).all(|(x, y)| x == y || placeholder(x) || placeholder(y));
                assert!(!overlap, "{} and {} match the same paths", a.path, b.path);
            }
            if a.caller == Agent(Named::Path) {
                assert!(segments(a).contains(&"{name}"), "{} names its agent in the path", a.path);
            }
        }
    }

    /// (status, reason, Allow) of `method url` by `principal`, without a coordinator: the
    /// routing and the checks only, as [`Coordinator::handle`](crate::coordinator) runs them.
    fn routed(method: Method, url: &str, body: &str, principal: Principal) -> Result<Vec<&'static str>, String> {
        let (call, _answer) = Call::for_test_as(method, url, body.as_bytes(), None, principal);
        let routed = Routed::new(&call);
        routed.check_access(false).map_err(|d| format!("403 {}: {}", d.who, d.reason))?;
        Ok(routed.routes.iter().map(|r| r.path).collect())
    }

    #[test]
    fn every_path_has_one_caller_and_tokens_act_only_as_their_role() {
        let agent = |name: &str| Principal::Agent(name.to_string());
        let body = r#"{"name":"n0"}"#;
        // The user's paths, the agents', and one path the API does not have (no role to check).
        assert!(routed(Get, "/v1/jobs/x", "", Principal::User).is_ok());
        assert!(routed(Post, "/v1/agents/register", body, agent("n0")).is_ok());
        assert!(routed(Get, "/v1/agents/n0/assignments?generation=1", "", agent("n0")).is_ok());
        assert_eq!(routed(Get, "/v1/nope", "", agent("n0")), Ok(vec![]));
        let e = routed(Post, "/v1/agents/heartbeat", body, Principal::User).unwrap_err();
        assert!(e.starts_with("403 a user: /v1/agents/heartbeat: a user token cannot act as an agent"), "{e}");
        let e = routed(Get, "/metrics", "", agent("n0")).unwrap_err();
        assert!(e.starts_with("403 n0: /metrics: agent `n0`'s token is for its agent's calls only"), "{e}");
        // Named in the path: another agent's name is refused here (named in the body, by the
        // handler's typed parse: the coordinator's tests).
        let e = routed(Get, "/v1/agents/n0/assignments", "", agent("n1")).unwrap_err();
        assert_eq!(e, "403 n1: /v1/agents/n0/assignments: agent `n1`'s token cannot act for agent `n0`");
        // The role is the path's, whatever the method.
        assert!(routed(Get, "/v1/agents/register", body, Principal::User).is_err());
    }

    #[test]
    fn a_path_the_api_has_with_another_method_is_405_with_allow_and_any_other_404() {
        let refused = |method: Method, url: &str| {
            let (call, _answer) = Call::for_test(method, url, b"", None);
            let routed = Routed::new(&call);
            let refusal = routed.route().err().unwrap_or_else(|| panic!("{url} has a route"));
            let answer = routed.refused(&refusal);
            (answer.status, answer.allow.clone(), String::from_utf8(answer.body.clone()).unwrap())
        };
        assert_eq!(
            refused(Method::Other("PUT".into()), "/v1/jobs/"),
            (405, Some("GET, POST".into()), r#"{"error":"PUT is not allowed on /v1/jobs/"}"#.into())
        );
        assert_eq!(refused(Post, "/metrics").1, Some("GET".into()));
        assert_eq!(refused(Post, "/v1/agents/n0/assignments?generation=1").1, Some("GET".into()));
        assert_eq!(refused(Get, "/v1/gpus/GPU-1/return").1, Some("POST".into()));
        assert_eq!(refused(Get, "/v1/jobs/a/b"), (404, None, r#"{"error":"no such endpoint: /v1/jobs/a/b"}"#.into()));
    }
}
