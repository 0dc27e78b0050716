// The console's one script: the WebAuthn ceremonies, which a page cannot hold without it.
// A form with data-ceremony posts its fields to data-options, hands the options it gets to
// the browser's passkey prompt, then posts what it got back, with the passkey's answer, to
// the form's action; every POST carries the page's CSRF token.
"use strict";

const csrf = document.querySelector('meta[name="csrf-token"]').content;

async function post(url, body) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "x-csrf-token": csrf },
    body: JSON.stringify(body),
    credentials: "same-origin",
  });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) {
    throw new Error(answer.message || response.statusText);
  }
  return answer;
}

async function passkey(kind, options) {
  if (kind === "create") {
    const publicKey = PublicKeyCredential.parseCreationOptionsFromJSON(options.publicKey);
    return navigator.credentials.create({ publicKey });
  }
  const publicKey = PublicKeyCredential.parseRequestOptionsFromJSON(options.publicKey);
  return navigator.credentials.get({ publicKey });
}

for (const form of document.querySelectorAll("form[data-ceremony]")) {
  const status = form.querySelector(".status");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    status.textContent = "Waiting for your passkey…";
    try {
      const fields = Object.fromEntries(new FormData(form));
      const begun = await post(form.dataset.options, fields);
      const credential = await passkey(form.dataset.ceremony, begun.options);
      const { options, ...rest } = begun;
      const done = await post(form.action, { ...rest, credential: credential.toJSON() });
      status.textContent = done.outcome ? "Recorded: " + done.outcome : "Done";
      window.location.assign(done.next);
    } catch (error) {
      status.textContent = error.message;
      status.classList.add("error");
    }
  });
}
