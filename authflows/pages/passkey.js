// Passkeys on Gatehouse's pages: every element with data-passkey
// ("login", "second-factor" or "register") runs that WebAuthn ceremony
// when clicked, and is shown only where the browser offers WebAuthn.
// Messages go to the [data-passkey-status] element.
(function () {
  "use strict";

  function toBuffer(s) {
    s = s.replace(/-/g, "+").replace(/_/g, "/");
    while (s.length % 4) { s += "="; }
    var bin = atob(s), out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { out[i] = bin.charCodeAt(i); }
    return out.buffer;
  }

  function toBase64URL(buf) {
    var bytes = new Uint8Array(buf), s = "";
    for (var i = 0; i < bytes.length; i++) { s += String.fromCharCode(bytes[i]); }
    return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function post(url, body) {
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "Accept": "application/json" },
      body: body === undefined ? "{}" : JSON.stringify(body)
    }).then(function (res) {
      return res.json().catch(function () { return {}; }).then(function (json) {
        if (!res.ok) {
          var err = new Error(json.title || "The request was refused");
          err.code = json.code || json.type || "";
          err.status = res.status;
          throw err;
        }
        return json;
      });
    });
  }

  function creation(options) {
    var pk = options.publicKey;
    pk.challenge = toBuffer(pk.challenge);
    pk.user.id = toBuffer(pk.user.id);
    (pk.excludeCredentials || []).forEach(function (c) { c.id = toBuffer(c.id); });
    return { publicKey: pk };
  }

  function request(options) {
    var pk = options.publicKey;
    pk.challenge = toBuffer(pk.challenge);
    (pk.allowCredentials || []).forEach(function (c) { c.id = toBuffer(c.id); });
    return { publicKey: pk };
  }

  function credentialJSON(c) {
    var r = c.response;
    var out = { id: c.id, rawId: toBase64URL(c.rawId), type: c.type, response: { clientDataJSON: toBase64URL(r.clientDataJSON) },
      clientExtensionResults: c.getClientExtensionResults ? c.getClientExtensionResults() : {} };
    if (r.attestationObject) {
      out.response.attestationObject = toBase64URL(r.attestationObject);
      if (r.getTransports) { out.response.transports = r.getTransports(); }
    }
    if (r.authenticatorData) {
      out.response.authenticatorData = toBase64URL(r.authenticatorData);
      out.response.signature = toBase64URL(r.signature);
      if (r.userHandle) { out.response.userHandle = toBase64URL(r.userHandle); }
    }
    return out;
  }

  function showCodes(status, codes) {
    status.className = "notice";
    status.textContent = "Passkey added. Your recovery codes, shown only now (each signs you in once):";
    var list = document.createElement("ul");
    list.className = "recovery-codes";
    codes.forEach(function (code) {
      var li = document.createElement("li"), el = document.createElement("code");
      el.textContent = code;
      li.appendChild(el);
      list.appendChild(li);
    });
    status.appendChild(list);
    var back = document.createElement("a");
    back.className = "button";
    back.href = "/auth/account?done=passkey_added";
    back.textContent = "Back to your account";
    status.appendChild(back);
  }

  function run(button, status) {
    var kind = button.getAttribute("data-passkey");
    var rd = button.getAttribute("data-rd") || "";
    status.className = "error";
    status.textContent = "";
    var done;
    if (kind === "register") {
      var name = document.getElementById("passkey-name");
      var query = name && name.value ? "?name=" + encodeURIComponent(name.value) : "";
      done = post("/auth/passkey/register/begin").then(function (o) {
        return navigator.credentials.create(creation(o));
      }).then(function (c) {
        return post("/auth/passkey/register/finish" + query, credentialJSON(c));
      }).then(function (res) {
        if (res.recovery_codes && res.recovery_codes.length) { showCodes(status, res.recovery_codes); return; }
        window.location.assign("/auth/account?done=passkey_added");
      });
    } else {
      var base = kind === "login" ? "/auth/passkey/login" : "/auth/2fa/passkey";
      done = post(base + "/begin").then(function (o) {
        return navigator.credentials.get(request(o));
      }).then(function (c) {
        return post(base + "/finish" + (rd ? "?rd=" + encodeURIComponent(rd) : ""), credentialJSON(c));
      }).then(function (res) {
        window.location.assign(res.redirect || "/");
      });
    }
    done.catch(function (err) {
      if (err.status === 401 && err.code === "reauthentication_required") {
        window.location.assign("/auth/login?reauth=max-age&rd=" + encodeURIComponent("/auth/account"));
        return;
      }
      status.textContent = err.name === "NotAllowedError" ? "The passkey was not used. Try again." : err.message;
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (!window.PublicKeyCredential || !navigator.credentials) { return; }
    var status = document.querySelector("[data-passkey-status]");
    document.querySelectorAll("[data-passkey]").forEach(function (button) {
      button.hidden = false;
      button.addEventListener("click", function () { run(button, status); });
    });
  });
})();
