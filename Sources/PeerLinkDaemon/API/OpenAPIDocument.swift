// The API's OpenAPI 3.1 document, embedded so the daemon serves it with no files beside the
// binary. docs/api/openapi.json is the same text (OpenAPIDocumentTests checks both, and that
// the document lists exactly the routes DaemonAPI answers): edit the docs file, then paste it here.
enum OpenAPIDocument {
    static let json = #"""
{
  "openapi": "3.1.0",
  "info": {
    "title": "PeerLink daemon local API",
    "version": "1",
    "description": "HTTP/1.1 over the Unix socket daemon.sock in the daemon's runtime directory (docs/API.md). Every connection's caller is checked with SO_PEERCRED: root, the daemon's user, or a member of the group 'peerlink'. One request per connection (Connection: close)."
  },
  "servers": [
    {
      "url": "http://localhost",
      "description": "any host name; the transport is the Unix socket"
    }
  ],
  "paths": {
    "/v1/status": {
      "get": {
        "operationId": "getStatus",
        "summary": "The node, its peers and its items now",
        "responses": {
          "200": {
            "description": "Status",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Status"
                }
              }
            }
          },
          "403": {
            "description": "The caller may not use the API",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    },
    "/v1/items": {
      "get": {
        "operationId": "listItems",
        "summary": "Outbound items, oldest first",
        "parameters": [
          {
            "name": "state",
            "in": "query",
            "required": false,
            "description": "Comma-separated states (default queued,sending).",
            "schema": {
              "type": "string",
              "example": "queued,sending"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "Items",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "items"
                  ],
                  "properties": {
                    "items": {
                      "type": "array",
                      "items": {
                        "$ref": "#/components/schemas/Item"
                      }
                    }
                  }
                }
              }
            }
          },
          "400": {
            "description": "An unknown state",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "403": {
            "description": "The caller may not use the API",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      },
      "post": {
        "operationId": "submitItem",
        "summary": "Queue a file for a peer",
        "description": "The daemon copies the file (which the caller must be able to read) into OUTBOX/<peer ID>/ and queues the copy; the caller's file may change or go at once. A 'message' instead of 'path' is answered 501: message items are not delivered yet.",
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/Submission"
              }
            }
          }
        },
        "responses": {
          "201": {
            "description": "Queued",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "item"
                  ],
                  "properties": {
                    "item": {
                      "$ref": "#/components/schemas/Item"
                    }
                  }
                }
              }
            }
          },
          "400": {
            "description": "A malformed body or field",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "403": {
            "description": "The caller may not use the API, or may not read the file",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "404": {
            "description": "No such file",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "413": {
            "description": "The body is over 1 MiB",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "422": {
            "description": "Not a regular file, or the peer is not known",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "501": {
            "description": "Message items are not delivered yet",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    },
    "/v1/events": {
      "get": {
        "operationId": "followEvents",
        "summary": "The daemon's events as Server-Sent Events",
        "description": "Each event has an id (increasing by one), an event name (its kind) and one line of JSON data. Resume with after=<last id seen> (or the Last-Event-ID header): every later event is sent, none twice. Without 'after', the stream starts at the oldest event held. An idle stream sends a ': keep-alive' comment every 15 s. The stream never ends on its own; a reader that falls more than the ring behind gets 'event: gone' and the stream closes.",
        "parameters": [
          {
            "name": "after",
            "in": "query",
            "required": false,
            "schema": {
              "type": "integer",
              "minimum": 0
            },
            "description": "Send the events with an ID above this one."
          },
          {
            "name": "Last-Event-ID",
            "in": "header",
            "required": false,
            "schema": {
              "type": "string"
            },
            "description": "As 'after' (the query wins)."
          }
        ],
        "responses": {
          "200": {
            "description": "An event stream",
            "content": {
              "text/event-stream": {
                "schema": {
                  "type": "string"
                },
                "x-event-data": {
                  "$ref": "#/components/schemas/Event"
                }
              }
            }
          },
          "400": {
            "description": "'after' is not a number",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "410": {
            "description": "Events after 'after' are no longer held (the ring holds the last 10 000), or are from an earlier run of the daemon; error.oldest_id is the oldest held.",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "403": {
            "description": "The caller may not use the API",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    },
    "/v1/pending": {
      "get": {
        "operationId": "listPending",
        "summary": "Unknown peers waiting for the owner's answer",
        "description": "With accept = \"known\", an invitation from a peer not in the trust store waits here for as long as the invitation's own timeout allows (at most 300 s) and is declined when it passes. A peer stays listed (waiting: false) for 10 minutes after it last asked; a daemon holding items for this node asks again every 10 s or so. First asked first.",
        "responses": {
          "200": {
            "description": "The pending peers",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "pending",
                    "blocked"
                  ],
                  "properties": {
                    "pending": {
                      "type": "array",
                      "items": {
                        "$ref": "#/components/schemas/PendingPeer"
                      }
                    },
                    "blocked": {
                      "type": "array",
                      "description": "Peers the owner blocked: their invitations are declined unasked.",
                      "items": {
                        "type": "object",
                        "required": [
                          "peer",
                          "name"
                        ],
                        "properties": {
                          "peer": {
                            "type": "string"
                          },
                          "name": {
                            "type": "string"
                          }
                        }
                      }
                    }
                  }
                }
              }
            }
          },
          "403": {
            "description": "The caller may not use the API",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    },
    "/v1/pending/{peer}": {
      "post": {
        "operationId": "answerPending",
        "summary": "The owner's answer to a pending peer",
        "description": "accept: adds the peer to the trust store (unless trust is false) and accepts its waiting invitation; when the invitation lapsed, the trusted peer's next invitation is accepted by the trust rule. decline: declines its waiting invitation and takes it off the list (it is listed again when it asks again). block: declines it now and every later invitation unasked, never listing it (event peer.declined with reason blocked); unblock: takes a blocked peer off the block list. Events: peer.accepted or peer.declined.",
        "parameters": [
          {
            "name": "peer",
            "in": "path",
            "required": true,
            "description": "The pending peer's ID, a unique ID prefix (4 or more characters) or its display name (percent-encoded).",
            "schema": {
              "type": "string"
            }
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/PendingAnswer"
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "What the answer did",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/PendingOutcome"
                }
              }
            }
          },
          "400": {
            "description": "A malformed body (unknown field, wrong type, answer not accept or decline)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "404": {
            "description": "No pending peer by that name (code not_pending; the message lists the pending peers)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "409": {
            "description": "accept with trust false, but no invitation waits (code not_waiting)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "500": {
            "description": "The trust store could not be written (code trust_store)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "403": {
            "description": "The caller may not use the API",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    },
    "/v1/peers": {
      "get": {
        "operationId": "listPeers",
        "summary": "The peers of the service the daemon sees now",
        "description": "What the daemon's browser finds, on every medium it uses, with whether each is in its session now; `peerlink browse` lists them while a daemon runs and follows the events peer.found and peer.lost.",
        "responses": {
          "200": {
            "description": "The peers, by peer ID",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "peers"
                  ],
                  "properties": {
                    "peers": {
                      "type": "array",
                      "items": {
                        "$ref": "#/components/schemas/Peer"
                      }
                    }
                  }
                }
              }
            }
          },
          "403": {
            "description": "The caller may not use the API",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    },
    "/v1/trust": {
      "get": {
        "operationId": "listTrusted",
        "summary": "The daemon's trust store",
        "description": "The peers the daemon trusts (accept = \"known\" takes their invitations and items), with when each was first trusted and how it was verified. This is the daemon's own store, in its configuration directory: `peerlink trust list` shows it while a daemon runs.",
        "responses": {
          "200": {
            "description": "Every trusted peer, by peer ID",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "trusted"
                  ],
                  "properties": {
                    "trusted": {
                      "type": "array",
                      "items": {
                        "$ref": "#/components/schemas/TrustedPeer"
                      }
                    }
                  }
                }
              }
            }
          },
          "403": {
            "description": "The caller may not use the API",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    },
    "/v1/trust/{peer}": {
      "put": {
        "operationId": "trustPeer",
        "summary": "Trust a peer",
        "description": "Adds the peer to the daemon's trust store, or updates its note. The first time it was trusted is kept; a verification is recorded when it is stronger than the one known (peer-id, then code), and a code comparison always anew. An empty body trusts with verification peer-id and keeps any note.",
        "parameters": [
          {
            "name": "peer",
            "in": "path",
            "required": true,
            "description": "The peer's full 32-character ID (a prefix or a name is refused: trust takes the whole ID).",
            "schema": {
              "type": "string"
            }
          }
        ],
        "requestBody": {
          "required": false,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/TrustRequest"
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "The peer as the store now holds it",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/TrustedPeer"
                }
              }
            }
          },
          "400": {
            "description": "Not a full peer ID (code bad_peer), or a malformed body (bad_json, bad_field)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "500": {
            "description": "The trust store could not be written (code trust_store)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "403": {
            "description": "The caller may not use the API",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      },
      "delete": {
        "operationId": "untrustPeer",
        "summary": "Stop trusting a peer",
        "parameters": [
          {
            "name": "peer",
            "in": "path",
            "required": true,
            "description": "The peer's full ID, or a trusted peer's note or unique ID prefix (4 or more characters), percent-encoded.",
            "schema": {
              "type": "string"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "Removed",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "peer",
                    "removed"
                  ],
                  "properties": {
                    "peer": {
                      "type": "string"
                    },
                    "removed": {
                      "type": "boolean"
                    }
                  }
                }
              }
            }
          },
          "404": {
            "description": "Not in the trust store (code not_trusted)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "409": {
            "description": "The name or prefix matches several trusted peers (code ambiguous; the message lists them)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "500": {
            "description": "The trust store could not be written (code trust_store)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "403": {
            "description": "The caller may not use the API",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    },
    "/v1/trust/{peer}/code": {
      "get": {
        "operationId": "verificationCode",
        "summary": "The verification code between the daemon's node and a peer",
        "description": "Thirty digits in six groups of five, computed from the two peer IDs (docs/PROTOCOL.md §17): the peer's owner runs `peerlink trust verify <the daemon's ID>` and the two compare. Record a match with PUT /v1/trust/{peer} and verification code.",
        "parameters": [
          {
            "name": "peer",
            "in": "path",
            "required": true,
            "description": "The peer's full ID, or a trusted peer's note or unique ID prefix (4 or more characters), percent-encoded.",
            "schema": {
              "type": "string"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The code",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/VerificationCode"
                }
              }
            }
          },
          "400": {
            "description": "The daemon's own ID (code bad_peer)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "404": {
            "description": "Neither a peer ID nor a trusted peer's note or prefix (code not_trusted)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "409": {
            "description": "The name or prefix matches several trusted peers (code ambiguous)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "500": {
            "description": "The node's key could not be read (code identity)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "403": {
            "description": "The caller may not use the API",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    },
    "/v1/openapi.json": {
      "get": {
        "operationId": "getOpenAPI",
        "summary": "This document",
        "responses": {
          "200": {
            "description": "The OpenAPI 3.1 document",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object"
                }
              }
            }
          }
        }
      }
    }
  },
  "components": {
    "schemas": {
      "Error": {
        "type": "object",
        "required": [
          "error"
        ],
        "properties": {
          "error": {
            "type": "object",
            "required": [
              "code",
              "message"
            ],
            "properties": {
              "code": {
                "type": "string",
                "description": "Stable, machine-readable (bad_request, forbidden, not_found, method_not_allowed, gone, …)."
              },
              "message": {
                "type": "string",
                "description": "For people."
              },
              "oldest_id": {
                "type": "integer",
                "description": "With 410 only."
              }
            }
          }
        }
      },
      "State": {
        "type": "string",
        "enum": [
          "queued",
          "sending",
          "delivered",
          "expired",
          "failed"
        ]
      },
      "Item": {
        "type": "object",
        "required": [
          "id",
          "peer",
          "kind",
          "size",
          "priority",
          "created",
          "expires",
          "state",
          "reason"
        ],
        "properties": {
          "id": {
            "type": "string",
            "pattern": "^[0-9a-f]{32}$",
            "description": "The item's ID (32 hex characters), chosen by this node."
          },
          "peer": {
            "type": "string",
            "description": "The peer's ID (32 base32 characters)."
          },
          "kind": {
            "type": "string",
            "enum": [
              "file",
              "message"
            ]
          },
          "size": {
            "type": "integer",
            "minimum": 0
          },
          "priority": {
            "type": "integer",
            "description": "Higher goes first; equal priorities go oldest first."
          },
          "created": {
            "type": "string",
            "format": "date-time"
          },
          "expires": {
            "type": "string",
            "format": "date-time"
          },
          "state": {
            "$ref": "#/components/schemas/State"
          },
          "reason": {
            "type": [
              "string",
              "null"
            ],
            "description": "Why it expired or failed."
          },
          "acknowledged": {
            "type": "integer",
            "description": "Bytes the peer has acknowledged holding."
          },
          "path": {
            "type": "string",
            "description": "The payload file: in the outbox while pending, in sent/, expired/ or failed/ once settled."
          }
        }
      },
      "Submission": {
        "type": "object",
        "required": [
          "peer"
        ],
        "additionalProperties": false,
        "properties": {
          "peer": {
            "type": "string",
            "description": "Peer ID, a unique ID prefix of 8 or more characters, or a name in the trust store."
          },
          "path": {
            "type": "string",
            "description": "Absolute path of a regular file the caller can read."
          },
          "message": {
            "type": "string",
            "description": "A message item instead of a file: 1 to 65536 bytes of UTF-8, delivered to the peer's inbox as message-<id>.txt."
          },
          "priority": {
            "type": "integer",
            "minimum": -1000,
            "maximum": 1000,
            "default": 0
          },
          "ttl": {
            "oneOf": [
              {
                "type": "string",
                "example": "2d",
                "description": "Numbers with s, m, h, d or w."
              },
              {
                "type": "integer",
                "minimum": 1,
                "description": "Seconds."
              }
            ],
            "description": "Time to live (default: the daemon's ttl)."
          }
        }
      },
      "Status": {
        "type": "object",
        "required": [
          "api_version",
          "peer",
          "name",
          "service",
          "uptime_seconds",
          "peers",
          "items",
          "inbox",
          "outbox",
          "events",
          "pid",
          "links"
        ],
        "properties": {
          "api_version": {
            "type": "integer",
            "const": 1
          },
          "pid": {
            "type": "integer",
            "description": "The daemon's process ID."
          },
          "peer": {
            "type": "string"
          },
          "name": {
            "type": "string"
          },
          "service": {
            "type": "string"
          },
          "uptime_seconds": {
            "type": "number"
          },
          "peers": {
            "type": "array",
            "items": {
              "type": "object",
              "required": [
                "peer",
                "name"
              ],
              "properties": {
                "peer": {
                  "type": "string"
                },
                "name": {
                  "type": "string"
                }
              }
            }
          },
          "items": {
            "type": "object",
            "description": "Outbound items per state.",
            "required": [
              "queued",
              "sending",
              "delivered",
              "expired",
              "failed"
            ],
            "additionalProperties": {
              "type": "integer"
            }
          },
          "inbox": {
            "type": "string"
          },
          "outbox": {
            "type": "string"
          },
          "events": {
            "type": "object",
            "required": [
              "oldest_id",
              "last_id"
            ],
            "properties": {
              "oldest_id": {
                "type": "integer"
              },
              "last_id": {
                "type": "integer",
                "description": "Follow only new events with after=last_id."
              }
            }
          },
          "links": {
            "type": "object",
            "description": "The daemon session's link policy and each connected peer's links, in the form `peerlink links --json` prints (peer, displayName, state, links with medium, remote, rttMillis, loss, throughput, wire (bytes sent and received on the wire), carries, reason, …).",
            "required": [
              "policy",
              "peers"
            ],
            "properties": {
              "policy": {
                "type": "string"
              },
              "peers": {
                "type": "array",
                "items": {
                  "type": "object"
                }
              }
            }
          }
        }
      },
      "Event": {
        "type": "object",
        "required": [
          "id",
          "kind",
          "time"
        ],
        "properties": {
          "id": {
            "type": "integer"
          },
          "kind": {
            "type": "string",
            "enum": [
              "item.queued",
              "item.delivered",
              "item.expired",
              "item.failed",
              "item.received",
              "file.received",
              "message.received",
              "peer.connected",
              "peer.left",
              "peer.pending",
              "peer.accepted",
              "peer.declined",
              "peer.found",
              "peer.lost"
            ]
          },
          "time": {
            "type": "string",
            "format": "date-time"
          },
          "peer": {
            "type": "string"
          },
          "name": {
            "type": "string"
          },
          "item": {
            "type": "string"
          },
          "path": {
            "type": "string"
          },
          "size": {
            "type": "integer"
          },
          "reason": {
            "type": "string",
            "description": "Why an item expired or failed; with peer.pending the peer's context text; with peer.accepted 'trusted' or 'accepted once'."
          }
        }
      },
      "PendingPeer": {
        "type": "object",
        "required": [
          "peer",
          "name",
          "context",
          "first_asked",
          "last_asked",
          "times_asked",
          "waiting",
          "seconds_left"
        ],
        "properties": {
          "peer": {
            "type": "string",
            "description": "The peer's ID (32 base32 characters)."
          },
          "name": {
            "type": "string",
            "description": "The display name it gave (not verified: only its ID is)."
          },
          "context": {
            "type": "string",
            "description": "Text it attached to its invitation (empty when none)."
          },
          "first_asked": {
            "type": "string",
            "format": "date-time"
          },
          "last_asked": {
            "type": "string",
            "format": "date-time"
          },
          "times_asked": {
            "type": "integer",
            "minimum": 1
          },
          "waiting": {
            "type": "boolean",
            "description": "An invitation from it waits for the answer now."
          },
          "seconds_left": {
            "type": [
              "number",
              "null"
            ],
            "description": "Until its waiting invitation lapses; null when none waits."
          }
        }
      },
      "PendingAnswer": {
        "type": "object",
        "required": [
          "answer"
        ],
        "additionalProperties": false,
        "properties": {
          "answer": {
            "type": "string",
            "enum": [
              "accept",
              "decline",
              "block",
              "unblock"
            ],
            "description": "accept: take its invitation (and trust it unless trust is false); decline: decline it and take it off the list until it asks again; block: decline it and every later invitation without listing it (blocked-peers beside the trust store; it also leaves the trust store); unblock: take a blocked peer (named by ID, prefix or name) off the block list."
          },
          "trust": {
            "type": "boolean",
            "default": true,
            "description": "With accept: add the peer to the trust store (the daemon takes items from trusted peers only)."
          },
          "name": {
            "type": "string",
            "description": "With accept: the name to trust it under (default: the name it gave)."
          }
        }
      },
      "PendingOutcome": {
        "type": "object",
        "required": [
          "peer",
          "name",
          "answer",
          "trusted",
          "invitation_answered"
        ],
        "properties": {
          "peer": {
            "type": "string"
          },
          "name": {
            "type": "string"
          },
          "answer": {
            "type": "string",
            "enum": [
              "accepted",
              "declined",
              "blocked",
              "unblocked"
            ]
          },
          "trusted": {
            "type": "boolean",
            "description": "The peer is in the trust store now."
          },
          "invitation_answered": {
            "type": "boolean",
            "description": "An invitation was waiting and got the answer now (false: it had lapsed)."
          }
        }
      },
      "TrustedPeer": {
        "type": "object",
        "required": [
          "peer",
          "note",
          "first_seen",
          "verification",
          "verified_at"
        ],
        "properties": {
          "peer": {
            "type": "string",
            "description": "Peer ID"
          },
          "note": {
            "type": "string",
            "description": "The owner's note, usually the peer's name (may be empty)"
          },
          "first_seen": {
            "type": [
              "string",
              "null"
            ],
            "format": "date-time",
            "description": "When the peer was first trusted; null for an entry written before the time was kept"
          },
          "verification": {
            "type": [
              "string",
              "null"
            ],
            "enum": [
              "first-use",
              "peer-id",
              "code",
              null
            ],
            "description": "first-use: accepted when it asked, nothing checked; peer-id: the owner gave its whole ID; code: verification codes compared"
          },
          "verified_at": {
            "type": [
              "string",
              "null"
            ],
            "format": "date-time"
          }
        }
      },
      "TrustRequest": {
        "type": "object",
        "additionalProperties": false,
        "properties": {
          "note": {
            "type": "string",
            "maxLength": 200,
            "description": "One line of text"
          },
          "verification": {
            "type": "string",
            "enum": [
              "peer-id",
              "code"
            ],
            "default": "peer-id"
          }
        }
      },
      "VerificationCode": {
        "type": "object",
        "required": [
          "self",
          "peer",
          "code",
          "trusted",
          "verification"
        ],
        "properties": {
          "self": {
            "type": "string",
            "description": "The daemon's peer ID"
          },
          "peer": {
            "type": "string"
          },
          "code": {
            "type": "string",
            "description": "Six groups of five digits separated by spaces",
            "pattern": "^[0-9]{5}( [0-9]{5}){5}$"
          },
          "trusted": {
            "type": "boolean"
          },
          "verification": {
            "type": [
              "string",
              "null"
            ],
            "enum": [
              "first-use",
              "peer-id",
              "code",
              null
            ]
          }
        }
      },
      "Peer": {
        "type": "object",
        "required": [
          "peer",
          "name",
          "info",
          "endpoints",
          "connected"
        ],
        "properties": {
          "peer": {
            "type": "string",
            "description": "Peer ID"
          },
          "name": {
            "type": "string",
            "description": "The display name it publishes"
          },
          "info": {
            "type": "object",
            "additionalProperties": {
              "type": "string"
            },
            "description": "Its discovery info"
          },
          "endpoints": {
            "type": "array",
            "items": {
              "type": "string"
            },
            "description": "Where it can be reached (tcp://…, rfcomm://…)"
          },
          "connected": {
            "type": "boolean",
            "description": "It is in the daemon's session now"
          }
        }
      }
    }
  }
}
"""#
}
