//! The published tool catalogue as the faults change it (tools/list: PROTO-3, LIM-7, ABS-1 and
//! the output schemas that follow ENV-7's shapes).

use super::*;

impl Proxy {
    pub(crate) fn rewrite_tools_list(&self, a: &mut Answer) {
        use Fault::*;
        let fault = self.fault;
        let Some(tools) = a.result_mut().and_then(|r| r.get_mut("tools")).and_then(Value::as_array_mut)
        else {
            return;
        };
        for tool in tools.iter_mut() {
            let name = tool["name"].as_str().unwrap_or_default().to_owned();
            let Some(d) = tool.as_object_mut() else { continue };
            match fault {
                Proto3OpenInputSchemas => {
                    if let Some(s) = d.get_mut("inputSchema").and_then(Value::as_object_mut) {
                        s.remove("additionalProperties");
                    }
                }
                Proto3NoOutputSchema => {
                    d.remove("outputSchema");
                }
                Proto3NoDescription => {
                    d.remove("description");
                }
                Proto3KeyedNotIdempotent if is_keyed(&name) => {
                    if let Some(an) = d.get_mut("annotations").and_then(Value::as_object_mut) {
                        an.remove("idempotentHint");
                    }
                }
                Lim7NoMaxLength => {
                    if let Some(s) = d.get_mut("inputSchema") {
                        walk_mut(s, &mut |_, v| {
                            if let Some(o) = v.as_object_mut() {
                                o.remove("maxLength");
                            }
                        });
                    }
                }
                Env7RestaurantAsItem => {
                    if let Some(data) =
                        d.get_mut("outputSchema").and_then(|s| s["oneOf"][0]["properties"].get_mut("data"))
                    {
                        rename_property(data, "restaurant", "item");
                    }
                }
                Env7MessagesInConversation if name == "get_conversation" => {
                    if let Some(data) =
                        d.get_mut("outputSchema").and_then(|s| s["oneOf"][0]["properties"].get_mut("data"))
                    {
                        let messages = data["properties"]["messages"].take();
                        if let Some(p) = data["properties"].as_object_mut() {
                            p.remove("messages");
                        }
                        if let Some(r) = data["required"].as_array_mut() {
                            r.retain(|x| x != "messages");
                        }
                        data["properties"]["conversation"]["properties"]["messages"] = messages;
                        if let Some(r) = data["properties"]["conversation"]["required"].as_array_mut() {
                            r.push(json!("messages"));
                        }
                    }
                }
                Abs2CancelAcked if name == "update_order_status" => {
                    if let Some(e) = d
                        .get_mut("inputSchema")
                        .and_then(|s| s["properties"]["status"]["enum"].as_array_mut())
                    {
                        e.extend([json!("cancelled"), json!("rejected")]);
                    }
                }
                _ => {}
            }
        }
        let extra = match fault {
            Abs1RefundTool => {
                Some(("refund_order", "Refund an order's payment to the customer, in full or in part."))
            }
            Abs1ArchiveDownload => Some((
                "download_order_history",
                "Download a restaurant's whole order history as one CSV document.",
            )),
            _ => None,
        };
        if let Some((name, description)) = extra {
            let mut d = ToolName::GetOrder.descriptor();
            d["name"] = json!(name);
            d["title"] = json!(name.replace('_', " "));
            d["description"] = json!(description);
            d["annotations"] =
                json!({ "readOnlyHint": false, "destructiveHint": true, "openWorldHint": true });
            tools.push(d);
        }
    }
}

pub(crate) fn rename_property(schema: &mut Value, from: &str, to: &str) {
    if let Some(p) = schema["properties"].as_object_mut()
        && let Some(x) = p.remove(from)
    {
        p.insert(to.into(), x);
    }
    if let Some(r) = schema["required"].as_array_mut() {
        for x in r.iter_mut() {
            if x == from {
                *x = json!(to);
            }
        }
    }
}
