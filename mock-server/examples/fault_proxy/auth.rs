//! The faults of AUTH: authorization (401 and its challenge, audience, scopes, tenancy, roles, order of checks).

use super::*;

impl Proxy {
    /// Request-side rewrites of this area's faults (`Proxy::before`).
    pub(crate) async fn before_auth(&self, call: &mut Call) -> Option<Answer> {
        use Fault::*;
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        let persona = self.data.persona(&call.token()).cloned();
        match self.fault {
            Auth2AudienceUnchecked => {
                let p = persona.filter(|p| p.audience.is_some())?;
                let s = self.data.sibling(&p, None)?;
                call.set_auth(&token_header(s));
            }
            Auth3ReadsUnscoped if matches!(kind(t), Some(Kind::Read | Kind::Analytics)) => {
                let scope = ToolName::parse(t)?.scope();
                let p = persona.filter(|p| !p.scopes.iter().any(|s| s == scope))?;
                let s = self.data.sibling(&p, Some(scope))?;
                call.set_auth(&token_header(s));
            }
            Auth6ViewerWrites if kind(t).is_some_and(Kind::is_write) => {
                let p = persona?;
                let m = self
                    .data
                    .memberships
                    .iter()
                    .find(|m| m.user == p.user && m.role == "viewer" && !m.revoked)?;
                let owner = self.data.owner_of_org(&m.org)?;
                call.set_auth(&token_header(owner));
            }
            Auth7RevokedIgnored => {
                let p = persona?;
                let revoked = self.data.memberships.iter().find(|m| m.user == p.user && m.revoked)?;
                let other = self.data.memberships.iter().find(|m| {
                    m.org == revoked.org && m.role == revoked.role && !m.revoked && m.user != p.user
                })?;
                let stand_in = self.data.personas.iter().find(|q| {
                    q.user == other.user && q.client == p.client && q.scopes.len() >= p.scopes.len()
                })?;
                call.set_auth(&token_header(stand_in));
            }
            Auth8ScopeBeforeSchema if kind(t).is_some() => {
                let scope = ToolName::parse(t)?.scope();
                let p = persona?;
                if !p.scopes.iter().any(|s| s == scope) {
                    let mut e = error_result(ErrorCode::ScopeRequired, &new_request_id());
                    e["structuredContent"]["data"]["error"]["required_scope"] = json!(scope);
                    return Some(Answer::rpc(call, "result", e));
                }
            }
            Auth8PreconditionBeforeRole if matches!(t, "update_order_status" | "set_restaurant_status") => {
                let expected = call.arg_str("expected_status")?;
                let current = self.current_status(call).await?;
                if current != expected {
                    let e = error_result(ErrorCode::ExpectedStateMismatch, &new_request_id());
                    return Some(Answer::rpc(call, "result", e));
                }
            }
            _ => {}
        }
        None
    }

    /// Answer-side rewrites of this area's faults (`Proxy::after`).
    pub(crate) async fn after_auth(&self, call: &Call, a: &mut Answer) {
        use Fault::*;
        let tool = call.tool().map(String::from);
        let t = tool.as_deref().unwrap_or_default();
        let code = a.code();
        let success = a.is_success();
        let persona = self.data.persona(&call.token()).cloned();
        match self.fault {
            Auth1401As200 if a.status == StatusCode::UNAUTHORIZED => {
                let rid = a.headers.get("x-request-id").cloned();
                *a = Answer::rpc(
                    call,
                    "error",
                    json!({ "code": -32001, "message": "Unauthorized: a valid bearer token is required" }),
                );
                if let Some(rid) = rid {
                    a.headers.insert("x-request-id", rid);
                }
            }
            Auth1NoChallenge if a.status == StatusCode::UNAUTHORIZED => {
                a.headers.remove(header::WWW_AUTHENTICATE);
            }
            Auth1InternalMetadataUrl if a.status == StatusCode::UNAUTHORIZED => {
                let challenge =
                    a.headers.get(header::WWW_AUTHENTICATE).and_then(|v| v.to_str().ok()).map(String::from);
                if let Some(c) = challenge {
                    let public = self.public_base(call);
                    let internal = c.replace(&public, "http://mcp-internal.svc.cluster.local:8080");
                    if let Ok(v) = HeaderValue::from_str(&internal) {
                        a.headers.insert(header::WWW_AUTHENTICATE, v);
                    }
                }
            }
            Auth2Audience403
                if a.status == StatusCode::UNAUTHORIZED
                    && persona.as_ref().is_some_and(|p| p.audience.is_some()) =>
            {
                let rid = a.headers.get("x-request-id").cloned();
                *a = Answer::plain(StatusCode::FORBIDDEN, "Forbidden: token audience");
                if let Some(rid) = rid {
                    a.headers.insert("x-request-id", rid);
                }
            }
            Auth3ScopeAsForbidden if code == Some(ErrorCode::ScopeRequired) => {
                a.recode(ErrorCode::ResourceForbidden)
            }
            Auth3NoRequiredScope if code == Some(ErrorCode::ScopeRequired) => {
                remove_error(a, "required_scope")
            }
            Auth4AbsentNotFound | Auth4AbsentMessageDiffers if code == Some(ErrorCode::ResourceForbidden) => {
                let target = call.arg_str("restaurant_id").or_else(|| call.arg_str("organization_id"));
                if target.is_some_and(|id| !self.exists(&id)) {
                    if self.fault == Auth4AbsentNotFound {
                        a.recode(ErrorCode::ResourceNotFound);
                    } else {
                        set_error(a, "message", json!("This restaurant or organization does not exist"));
                    }
                }
            }
            Auth4ForeignOrgEmpty
                if t == "list_restaurants"
                    && call.has_arg("organization_id")
                    && code == Some(ErrorCode::ResourceForbidden) =>
            {
                *a = Answer::rpc(
                    call,
                    "result",
                    success_result(json!({ "restaurants": [] }), fresh_meta(), "0 restaurants"),
                );
            }
            Auth5SiblingLookup | Auth5ForeignLookup | Auth5WriteLookup
                if code == Some(ErrorCode::ResourceNotFound) =>
            {
                let reads = matches!(t, "get_order" | "get_conversation" | "get_transcript");
                let writes = matches!(t, "update_order_status" | "send_message");
                if ((self.fault == Auth5WriteLookup && writes) || (self.fault != Auth5WriteLookup && reads))
                    && let Some(found) = self.lookup_elsewhere(call).await
                {
                    *a = found;
                }
            }
            Auth5AbsentForbidden if code == Some(ErrorCode::ResourceNotFound) => {
                a.recode(ErrorCode::ResourceForbidden)
            }
            Auth5SearchSpansOrg
                if success
                    && matches!(t, "search_transcripts" | "list_instructions")
                    && !call.has_arg("cursor") =>
            {
                let rst = call.arg_str("restaurant_id").unwrap_or_default();
                if let Some(org) = self.owner(&rst) {
                    let siblings: Vec<String> = self
                        .data
                        .restaurant_org
                        .iter()
                        .filter(|(r, o)| **o == org && **r != rst)
                        .map(|(r, _)| r.clone())
                        .collect();
                    for other in siblings {
                        let b = self
                            .forward(&call.with_args(|x| {
                                x.insert("restaurant_id".into(), json!(other));
                            }))
                            .await;
                        let extra = b.items(t).cloned().unwrap_or_default();
                        if let Some(items) = a.items_mut(t) {
                            items.extend(extra);
                        }
                    }
                }
            }
            Auth6RoleAsScope
                if code == Some(ErrorCode::ResourceForbidden) && kind(t).is_some_and(Kind::is_write) =>
            {
                let Some(p) = persona else { return };
                let rst = call.arg_str("restaurant_id");
                let org =
                    rst.as_deref().and_then(|r| self.owner(r)).or_else(|| call.arg_str("organization_id"));
                let member = org.and_then(|o| self.data.membership(&p.user, &o).cloned());
                let in_reach = member.is_some_and(|m| {
                    !m.revoked && m.restaurants.is_none_or(|rs| rst.is_none_or(|r| rs.contains(&r)))
                });
                if in_reach && let Some(scope) = ToolName::parse(t).map(ToolName::scope) {
                    a.recode(ErrorCode::ScopeRequired);
                    set_error(a, "required_scope", json!(scope));
                }
            }
            Auth7MembershipCache if code == Some(ErrorCode::ResourceForbidden) => {
                let Some(target) = call.arg_str("restaurant_id").or_else(|| call.arg_str("organization_id"))
                else {
                    return;
                };
                let recent = lock(&self.memory)
                    .seen_access
                    .get(&(call.auth(), target.clone()))
                    .is_some_and(|at| at.elapsed() < Duration::from_secs(60));
                let org = if target.starts_with("org_") { Some(target) } else { self.owner(&target) };
                if recent && let Some(auth) = org.and_then(|o| self.auth_for_org(&o)) {
                    let b = self.forward(&call.as_auth(&auth)).await;
                    if b.is_success() {
                        *a = b;
                    }
                }
            }
            _ => {}
        }
    }

    /// The public base URL the client used (scheme and authority), as the challenge names it.
    pub(crate) fn public_base(&self, call: &Call) -> String {
        let host = call.headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or_default();
        format!("http://{host}")
    }

    /// AUTH-5 broken: find the child through the restaurant that owns it, as the caller or,
    /// across tenants, as someone of that tenant.
    pub(crate) async fn lookup_elsewhere(&self, call: &Call) -> Option<Answer> {
        let child = ["order_id", "conversation_id", "transcript_id"].iter().find_map(|k| call.arg_str(k))?;
        let asked = call.arg_str("restaurant_id")?;
        let real = self.owner(&child).filter(|r| *r != asked)?;
        let same_org = self.owner(&real).is_some_and(|o| Some(o) == self.owner(&asked));
        let moved = call.with_args(|x| {
            x.insert("restaurant_id".into(), json!(real));
        });
        let attempt = match self.fault {
            Fault::Auth5SiblingLookup if same_org => moved,
            Fault::Auth5ForeignLookup if !same_org => moved.as_auth(&self.auth_for_org(&self.owner(&real)?)?),
            Fault::Auth5WriteLookup => moved,
            _ => return None,
        };
        let mut b = self.forward(&attempt).await;
        if !b.is_success() && self.fault == Fault::Auth5WriteLookup {
            let auth = self.auth_for_org(&self.owner(&real)?)?;
            b = self.forward(&attempt.as_auth(&auth)).await;
        }
        b.is_success().then_some(b)
    }
}
