// A stand-in for the UI's bundle (tests/ui_sample: the layout of Unleash's frontend/build).
document.getElementById("app").textContent = "the sample UI of the tests";
