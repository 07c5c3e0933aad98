import { describe, expect, it } from 'vitest';
import { tokenize } from '@farebox/discovery';

describe('tokenize', () => {
  it('folds accents so French, Spanish and German spellings match their plain forms', () => {
    expect(tokenize('Météo à Genève')).toEqual(['meteo', 'a', 'geneve']);
    expect(tokenize('pronóstico del TIEMPO')).toEqual(['pronostico', 'del', 'tiempo']);
    expect(tokenize('Übersetzung für München')).toEqual(['ubersetzung', 'fur', 'munchen']);
  });

  it('splits on any non-letter, non-number character in any script', () => {
    expect(tokenize("l'API — weather/forecast, v2!")).toEqual(['l', 'api', 'weather', 'forecast', 'v2']);
    expect(tokenize('Ελληνική μετάφραση')).toEqual(['ελληνικη', 'μεταφραση']);
    expect(tokenize('перевод текста')).toEqual(['перевод', 'текста']);
  });

  it('keeps marks that carry meaning outside the Latin, Greek and Cyrillic accents', () => {
    expect(tokenize('हिन्दी अनुवाद')).toEqual(['हिन्दी', 'अनुवाद']);
  });

  it('splits camelCase service names', () => {
    expect(tokenize('WeatherNow mp3ToWav HTTPServer')).toEqual(['weather', 'now', 'mp3', 'to', 'wav', 'http', 'server']);
  });

  it('turns Chinese and Japanese runs into character bigrams', () => {
    expect(tokenize('天気予報')).toEqual(['天気', '気予', '予報']);
    expect(tokenize('翻译服务')).toEqual(['翻译', '译服', '服务']);
    expect(tokenize('天')).toEqual(['天']);
    expect(tokenize('API天気')).toEqual(['api', '天気']);
  });

  it('normalises full-width Latin and half-width katakana first', () => {
    expect(tokenize('ＡＰＩ ｶﾀｶﾅ')).toEqual(['api', 'カタ', 'タカ', 'カナ']);
  });

  it('returns surface forms (the keyword index stems them per language)', () => {
    expect(tokenize('forecasts running')).toEqual(['forecasts', 'running']);
  });
});
