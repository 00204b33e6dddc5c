// Shared by the shop pages: a product catalogue, a cart in localStorage, and a signed-in user.
const PRODUCTS = [
  ["Apples (1 kg)", 3.2], ["Bananas (1 kg)", 2.1], ["Rye bread", 3.9], ["Butter", 2.5], ["Cheddar", 5.4],
  ["Coffee beans", 11.0], ["Darjeeling tea", 7.5], ["Eggs (10)", 3.6], ["Flour (1 kg)", 1.4], ["Green beans", 2.9],
  ["Honey", 6.8], ["Jam, apricot", 3.3], ["Kale", 2.2], ["Lemons (4)", 1.9], ["Milk (1 l)", 1.2],
  ["Noodles", 1.7], ["Olive oil", 9.5], ["Oat flakes", 2.4], ["Pasta", 1.6], ["Pepper, black", 2.8],
  ["Rice (1 kg)", 2.6], ["Salt", 0.9], ["Sugar", 1.3], ["Tomatoes", 3.0], ["Tuna (can)", 2.3],
  ["Vinegar", 1.8], ["Walnuts", 6.1], ["Yoghurt", 1.1], ["Zucchini", 2.0], ["Chocolate, dark", 2.7],
].map(([name, price], i) => ({ id: i + 1, name, price }));

function cart() { return JSON.parse(localStorage.getItem("cart") || "{}"); }
function saveCart(c) { localStorage.setItem("cart", JSON.stringify(c)); showCount(); }
function showCount() {
  const n = Object.values(cart()).reduce((a, b) => a + b, 0);
  const el = document.getElementById("cart-count");
  if (el) el.textContent = String(n);
}
function user() { return localStorage.getItem("user"); }
document.addEventListener("DOMContentLoaded", showCount);
